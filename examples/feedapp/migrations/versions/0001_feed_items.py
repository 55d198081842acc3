"""feed_items, and pgdedup's schema pinned to a revision, in one transaction.

Revision ID: 0001_feed_items
Revises:
"""

import sqlalchemy as sa
from alembic import op

import pgdedup

revision = "0001_feed_items"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "feed_items",
        sa.Column("feed_item_id", sa.Uuid, primary_key=True),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("duplicate_of", sa.Uuid, nullable=True),  # pgdedup's marking column, declared
    )
    pgdedup.migrate(op.get_bind(), "0008_view")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "base")
    op.drop_table("feed_items")
