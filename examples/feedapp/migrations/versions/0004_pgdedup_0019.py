"""Take in pgdedup's revision 0019_parallel, as an app does for each pgdedup release.

Revision ID: 0004_pgdedup_0019
Revises: 0003_pgdedup_0018
"""

from alembic import op

import pgdedup

revision = "0004_pgdedup_0019"
down_revision = "0003_pgdedup_0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0019_parallel")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0018_flush")
