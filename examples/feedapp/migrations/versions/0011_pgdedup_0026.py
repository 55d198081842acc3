"""Take in pgdedup's revision 0026_pairs, as an app does for each pgdedup release.

Revision ID: 0011_pgdedup_0026
Revises: 0010_pgdedup_0025
"""

from alembic import op

import pgdedup

revision = "0011_pgdedup_0026"
down_revision = "0010_pgdedup_0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0026_pairs")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0025_capped")
