"""Take in pgdedup's revision 0020_privileges, as an app does for each pgdedup release.

Revision ID: 0005_pgdedup_0020
Revises: 0004_pgdedup_0019
"""

from alembic import op

import pgdedup

revision = "0005_pgdedup_0020"
down_revision = "0004_pgdedup_0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0020_privileges")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0019_parallel")
