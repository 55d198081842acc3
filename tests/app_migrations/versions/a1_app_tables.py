"""The application's first migration: its own table, then pgdedup's schema in the same transaction.

Revision ID: a1_app_tables
Revises:
"""

from alembic import op

import pgdedup

revision = "a1_app_tables"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("CREATE TABLE app_items (id bigint PRIMARY KEY, body text)")
    pgdedup.migrate(op.get_bind())  # README recipe: pgdedup's revisions ride along
    op.execute("CREATE INDEX app_items_body ON app_items (body)")  # the app's op still works after


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "base")
    op.execute("DROP TABLE app_items")
