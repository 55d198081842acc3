"""Take in pgdedup's revision 0035_lookups, as an app does for each pgdedup release.

Revision ID: 0020_pgdedup_0035
Revises: 0019_pgdedup_0034
"""

from alembic import op

import pgdedup

revision = "0020_pgdedup_0035"
down_revision = "0019_pgdedup_0034"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0035_lookups")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0034_counts")
