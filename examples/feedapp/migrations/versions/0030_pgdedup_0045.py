"""Take in pgdedup's revision 0045_statistics, as an app does for each pgdedup release.

Revision ID: 0030_pgdedup_0045
Revises: 0029_pgdedup_0044
"""

from alembic import op

import pgdedup

revision = "0030_pgdedup_0045"
down_revision = "0029_pgdedup_0044"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0045_statistics")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0044_large_changes")
