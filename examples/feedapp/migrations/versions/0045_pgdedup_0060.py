"""Take in pgdedup's revision 0060_unmark_lock_order, as an app does for each pgdedup release.

Revision ID: 0045_pgdedup_0060
Revises: 0044_pgdedup_0059
"""

from alembic import op

import pgdedup

revision = "0045_pgdedup_0060"
down_revision = "0044_pgdedup_0059"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0060_unmark_lock_order")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0059_unseen_writes")
