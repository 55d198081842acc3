"""Take in pgdedup's revision 0037_twice, as an app does for each pgdedup release.

Revision ID: 0022_pgdedup_0037
Revises: 0021_pgdedup_0036
"""

from alembic import op

import pgdedup

revision = "0022_pgdedup_0037"
down_revision = "0021_pgdedup_0036"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0037_twice")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0036_store_diff")
