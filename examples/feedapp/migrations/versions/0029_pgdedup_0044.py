"""Take in pgdedup's revision 0044_large_changes, as an app does for each pgdedup release.

Revision ID: 0029_pgdedup_0044
Revises: 0028_pgdedup_0043
"""

from alembic import op

import pgdedup

revision = "0029_pgdedup_0044"
down_revision = "0028_pgdedup_0043"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0044_large_changes")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0043_new_marks")
