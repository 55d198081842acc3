"""Take in pgdedup's revision 0054_keep_order_types, as an app does for each pgdedup release.

Revision ID: 0039_pgdedup_0054
Revises: 0038_pgdedup_0053
"""

from alembic import op

import pgdedup

revision = "0039_pgdedup_0054"
down_revision = "0038_pgdedup_0053"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0054_keep_order_types")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0053_session_state")
