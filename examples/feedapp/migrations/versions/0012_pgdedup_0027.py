"""Take in pgdedup's revision 0027_copies, as an app does for each pgdedup release.

Revision ID: 0012_pgdedup_0027
Revises: 0011_pgdedup_0026
"""

from alembic import op

import pgdedup

revision = "0012_pgdedup_0027"
down_revision = "0011_pgdedup_0026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0027_copies")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0026_pairs")
