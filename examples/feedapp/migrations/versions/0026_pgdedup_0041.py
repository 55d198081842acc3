"""Take in pgdedup's revision 0041_rebuild, as an app does for each pgdedup release.

Revision ID: 0026_pgdedup_0041
Revises: 0025_pgdedup_0040
"""

from alembic import op

import pgdedup

revision = "0026_pgdedup_0041"
down_revision = "0025_pgdedup_0040"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0041_rebuild")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0040_own_state")
