"""Take in pgdedup's revision 0058_lost_tracking, as an app does for each pgdedup release.

Revision ID: 0043_pgdedup_0058
Revises: 0042_pgdedup_0057
"""

from alembic import op

import pgdedup

revision = "0043_pgdedup_0058"
down_revision = "0042_pgdedup_0057"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0058_lost_tracking")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0057_refusals")
