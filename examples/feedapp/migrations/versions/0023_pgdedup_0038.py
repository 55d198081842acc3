"""Take in pgdedup's revision 0038_edges, as an app does for each pgdedup release.

Revision ID: 0023_pgdedup_0038
Revises: 0022_pgdedup_0037
"""

from alembic import op

import pgdedup

revision = "0023_pgdedup_0038"
down_revision = "0022_pgdedup_0037"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0038_edges")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0037_twice")
