"""Take in pgdedup's revision 0028_source_lock, as an app does for each pgdedup release.

Revision ID: 0013_pgdedup_0028
Revises: 0012_pgdedup_0027
"""

from alembic import op

import pgdedup

revision = "0013_pgdedup_0028"
down_revision = "0012_pgdedup_0027"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0028_source_lock")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0027_copies")
