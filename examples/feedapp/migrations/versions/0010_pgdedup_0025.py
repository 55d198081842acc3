"""Take in pgdedup's revision 0025_capped, as an app does for each pgdedup release.

Revision ID: 0010_pgdedup_0025
Revises: 0009_pgdedup_0024
"""

from alembic import op

import pgdedup

revision = "0010_pgdedup_0025"
down_revision = "0009_pgdedup_0024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0025_capped")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0024_source_check")
