"""Take in pgdedup's revision 0052_lock_timeouts, as an app does for each pgdedup release.

Revision ID: 0037_pgdedup_0052
Revises: 0036_pgdedup_0051
"""

from alembic import op

import pgdedup

revision = "0037_pgdedup_0052"
down_revision = "0036_pgdedup_0051"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0052_lock_timeouts")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0051_statistics_info")
