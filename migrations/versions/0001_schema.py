"""Collections, signatures, band keys, run history.

Revision ID: 0001_schema
Revises:
"""

from pgdedup.migrate import run_sql_file

revision = "0001_schema"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0001_schema.sql")


def downgrade() -> None:
    run_sql_file("0001_schema.down.sql")
