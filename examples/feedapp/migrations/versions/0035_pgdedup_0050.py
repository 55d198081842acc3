"""Take in pgdedup's revision 0050_statistics_notice, as an app does for each pgdedup release.

Revision ID: 0035_pgdedup_0050
Revises: 0034_pgdedup_0049
"""

from alembic import op

import pgdedup

revision = "0035_pgdedup_0050"
down_revision = "0034_pgdedup_0049"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0050_statistics_notice")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0049_autovacuum")
