"""Take in pgdedup's revision 0009_forward (a newer pgdedup release), as an app does for each one.

Revision ID: 0002_pgdedup_forward
Revises: 0001_feed_items
"""

from alembic import op

import pgdedup

revision = "0002_pgdedup_forward"
down_revision = "0001_feed_items"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0009_forward")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0008_view")
