"""Take in pgdedup's revision 0034_counts, as an app does for each pgdedup release.

Revision ID: 0019_pgdedup_0034
Revises: 0018_pgdedup_0033
"""

from alembic import op

import pgdedup

revision = "0019_pgdedup_0034"
down_revision = "0018_pgdedup_0033"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0034_counts")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0033_capped_predicted")
