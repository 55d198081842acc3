"""Take in pgdedup's revision 0017_walk, as an app does for each pgdedup release.

Revision ID: 0003_pgdedup_0017
Revises: 0002_pgdedup_0016
"""

from alembic import op

import pgdedup

revision = "0003_pgdedup_0017"
down_revision = "0002_pgdedup_0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0017_walk")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0016_walk")
