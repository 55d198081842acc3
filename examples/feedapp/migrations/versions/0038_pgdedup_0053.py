"""Take in pgdedup's revision 0053_session_state, as an app does for each pgdedup release.

Revision ID: 0038_pgdedup_0053
Revises: 0037_pgdedup_0052
"""

from alembic import op

import pgdedup

revision = "0038_pgdedup_0053"
down_revision = "0037_pgdedup_0052"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0053_session_state")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0052_lock_timeouts")
