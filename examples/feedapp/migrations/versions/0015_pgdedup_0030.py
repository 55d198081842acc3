"""Take in pgdedup's revision 0030_hold, as an app does for each pgdedup release.

Revision ID: 0015_pgdedup_0030
Revises: 0014_pgdedup_0029
"""

from alembic import op

import pgdedup

revision = "0015_pgdedup_0030"
down_revision = "0014_pgdedup_0029"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pgdedup.migrate(op.get_bind(), "0030_hold")


def downgrade() -> None:
    pgdedup.downgrade(op.get_bind(), "0029_catch_up")
