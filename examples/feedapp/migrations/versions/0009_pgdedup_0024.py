"""Take in pgdedup's revision 0024_source_check, as an app does for each pgdedup release.

Revision ID: 0009_pgdedup_0024
Revises: 0008_pgdedup_0023
"""

from alembic import op

import pgdedup

revision = "0009_pgdedup_0024"
down_revision = "0008_pgdedup_0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0024_source_check")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0023_sketches")
