"""Take in pgdedup's revision 0031_small_sets, as an app does for each pgdedup release.

Revision ID: 0016_pgdedup_0031
Revises: 0015_pgdedup_0030
"""

from alembic import op

import pgdedup

revision = "0016_pgdedup_0031"
down_revision = "0015_pgdedup_0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0031_small_sets")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0030_hold")
