"""Take in pgdedup's revision 0059_unseen_writes, as an app does for each pgdedup release.

Revision ID: 0044_pgdedup_0059
Revises: 0043_pgdedup_0058
"""

from alembic import op

import pgdedup

revision = "0044_pgdedup_0059"
down_revision = "0043_pgdedup_0058"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0059_unseen_writes")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0058_lost_tracking")
