"""Take in pgdedup's revision 0057_refusals, as an app does for each pgdedup release.

Revision ID: 0042_pgdedup_0057
Revises: 0041_pgdedup_0056
"""

from alembic import op

import pgdedup

revision = "0042_pgdedup_0057"
down_revision = "0041_pgdedup_0056"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0057_refusals")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0056_guard_index")
