"""Take in pgdedup's revision 0032_redecide, as an app does for each pgdedup release.

Revision ID: 0017_pgdedup_0032
Revises: 0016_pgdedup_0031
"""

from alembic import op

import pgdedup

revision = "0017_pgdedup_0032"
down_revision = "0016_pgdedup_0031"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0032_redecide")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0031_small_sets")
