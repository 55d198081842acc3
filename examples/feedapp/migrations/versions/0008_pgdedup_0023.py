"""Take in pgdedup's revision 0023_sketches, as an app does for each pgdedup release.

Revision ID: 0008_pgdedup_0023
Revises: 0007_pgdedup_0022
"""

from alembic import op

import pgdedup

revision = "0008_pgdedup_0023"
down_revision = "0007_pgdedup_0022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0023_sketches")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0022_unmark")
