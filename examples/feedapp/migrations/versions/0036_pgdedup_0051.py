"""Take in pgdedup's revision 0051_statistics_info, as an app does for each pgdedup release.

Revision ID: 0036_pgdedup_0051
Revises: 0035_pgdedup_0050
"""

from alembic import op

import pgdedup

revision = "0036_pgdedup_0051"
down_revision = "0035_pgdedup_0050"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0051_statistics_info")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0050_statistics_notice")
