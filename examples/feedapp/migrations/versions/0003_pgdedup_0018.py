"""Take in pgdedup's revisions up to 0018_flush, as an app does for each pgdedup release.

Revision ID: 0003_pgdedup_0018
Revises: 0002_pgdedup_0016
"""

from alembic import op

import pgdedup

revision = "0003_pgdedup_0018"
down_revision = "0002_pgdedup_0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0018_flush")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0016_walk")
