"""Take in pgdedup's revision 0042_rebuild_checks, as an app does for each pgdedup release.

Revision ID: 0027_pgdedup_0042
Revises: 0026_pgdedup_0041
"""

from alembic import op

import pgdedup

revision = "0027_pgdedup_0042"
down_revision = "0026_pgdedup_0041"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0042_rebuild_checks")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0041_rebuild")
