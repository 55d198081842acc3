"""Take in pgdedup's revision 0022_unmark, as an app does for each pgdedup release.

Revision ID: 0007_pgdedup_0022
Revises: 0006_pgdedup_0021
"""

from alembic import op

import pgdedup

revision = "0007_pgdedup_0022"
down_revision = "0006_pgdedup_0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0022_unmark")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0021_guards")
