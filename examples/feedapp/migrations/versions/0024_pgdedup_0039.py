"""Take in pgdedup's revision 0039_resume, as an app does for each pgdedup release.

Revision ID: 0024_pgdedup_0039
Revises: 0023_pgdedup_0038
"""

from alembic import op

import pgdedup

revision = "0024_pgdedup_0039"
down_revision = "0023_pgdedup_0038"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0039_resume")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0038_edges")
