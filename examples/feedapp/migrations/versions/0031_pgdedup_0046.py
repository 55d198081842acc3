"""Take in pgdedup's revision 0046_statistics_check, as an app does for each pgdedup release.

Revision ID: 0031_pgdedup_0046
Revises: 0030_pgdedup_0045
"""

from alembic import op

import pgdedup

revision = "0031_pgdedup_0046"
down_revision = "0030_pgdedup_0045"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0046_statistics_check")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0045_statistics")
