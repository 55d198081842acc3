"""Take in pgdedup's revision 0055_trusted_owners, as an app does for each pgdedup release.

Revision ID: 0040_pgdedup_0055
Revises: 0039_pgdedup_0054
"""

from alembic import op

import pgdedup

revision = "0040_pgdedup_0055"
down_revision = "0039_pgdedup_0054"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0055_trusted_owners")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0054_keep_order_types")
