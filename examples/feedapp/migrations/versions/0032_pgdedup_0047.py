"""Take in pgdedup's revision 0047_statistics_rights, as an app does for each pgdedup release.

Revision ID: 0032_pgdedup_0047
Revises: 0031_pgdedup_0046
"""

from alembic import op

import pgdedup

revision = "0032_pgdedup_0047"
down_revision = "0031_pgdedup_0046"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0047_statistics_rights")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0046_statistics_check")
