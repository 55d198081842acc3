"""Take in pgdedup's revision 0043_new_marks, as an app does for each pgdedup release.

Revision ID: 0028_pgdedup_0043
Revises: 0027_pgdedup_0042
"""

from alembic import op

import pgdedup

revision = "0028_pgdedup_0043"
down_revision = "0027_pgdedup_0042"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0043_new_marks")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0042_rebuild_checks")
