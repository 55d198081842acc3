"""Take in pgdedup's revision 0040_own_state, as an app does for each pgdedup release.

Revision ID: 0025_pgdedup_0040
Revises: 0024_pgdedup_0039
"""

from alembic import op

import pgdedup

revision = "0025_pgdedup_0040"
down_revision = "0024_pgdedup_0039"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0040_own_state")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0039_resume")
