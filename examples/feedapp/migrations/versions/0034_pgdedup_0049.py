"""Take in pgdedup's revision 0049_autovacuum, as an app does for each pgdedup release.

Revision ID: 0034_pgdedup_0049
Revises: 0033_pgdedup_0048
"""

from alembic import op

import pgdedup

revision = "0034_pgdedup_0049"
down_revision = "0033_pgdedup_0048"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0049_autovacuum")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0048_statistics_notices")
