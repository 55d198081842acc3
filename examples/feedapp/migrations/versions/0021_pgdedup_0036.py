"""Take in pgdedup's revision 0036_store_diff, as an app does for each pgdedup release.

Revision ID: 0021_pgdedup_0036
Revises: 0020_pgdedup_0035
"""

from alembic import op

import pgdedup

revision = "0021_pgdedup_0036"
down_revision = "0020_pgdedup_0035"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0036_store_diff")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0035_lookups")
