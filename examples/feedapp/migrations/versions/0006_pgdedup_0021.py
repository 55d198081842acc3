"""Take in pgdedup's revision 0021_guards, as an app does for each pgdedup release.

Revision ID: 0006_pgdedup_0021
Revises: 0005_pgdedup_0020
"""

from alembic import op

import pgdedup

revision = "0006_pgdedup_0021"
down_revision = "0005_pgdedup_0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0021_guards")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0020_privileges")
