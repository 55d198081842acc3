"""Take in pgdedup's revision 0056_guard_index, as an app does for each pgdedup release.

Revision ID: 0041_pgdedup_0056
Revises: 0040_pgdedup_0055
"""

from alembic import op

import pgdedup

revision = "0041_pgdedup_0056"
down_revision = "0040_pgdedup_0055"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0056_guard_index")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0055_trusted_owners")
