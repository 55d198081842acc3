"""Take in pgdedup's revision 0029_catch_up, as an app does for each pgdedup release.

Revision ID: 0014_pgdedup_0029
Revises: 0013_pgdedup_0028
"""

from alembic import op

import pgdedup

revision = "0014_pgdedup_0029"
down_revision = "0013_pgdedup_0028"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0029_catch_up")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0028_source_lock")
