"""Take in pgdedup's revision 0033_capped_predicted, as an app does for each pgdedup release.

Revision ID: 0018_pgdedup_0033
Revises: 0017_pgdedup_0032
"""

from alembic import op

import pgdedup

revision = "0018_pgdedup_0033"
down_revision = "0017_pgdedup_0032"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0033_capped_predicted")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0032_redecide")
