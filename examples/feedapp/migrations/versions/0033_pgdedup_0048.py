"""Take in pgdedup's revision 0048_statistics_notices, as an app does for each pgdedup release.

Revision ID: 0033_pgdedup_0048
Revises: 0032_pgdedup_0047
"""

from alembic import op

import pgdedup

revision = "0033_pgdedup_0048"
down_revision = "0032_pgdedup_0047"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0048_statistics_notices")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0047_statistics_rights")
