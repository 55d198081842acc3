"""Take in pgdedup's newer revisions (up to 0016_walk), as an app does for each pgdedup release.

Revision ID: 0002_pgdedup_0016
Revises: 0001_feed_items
"""

from alembic import op

import pgdedup

revision = "0002_pgdedup_0016"
down_revision = "0001_feed_items"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0016_walk")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0008_view")
