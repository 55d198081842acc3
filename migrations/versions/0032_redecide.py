"""redecide: the next auto dedupe of every target decides in full, so that no mark made by the
previous rule for pairs of short texts survives outside an incremental run's region (revision
31 changed the rule, and its downgrade changes it back: the downgrade does the same).

Revision ID: 0032_redecide
Revises: 0031_small_sets
Applies sql/0032_redecide.sql; the downgrade, sql/0032_redecide.down.sql.
"""

from pgdedup.alembic_ops import run_sql_file

revision = "0032_redecide"
down_revision = "0031_small_sets"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0032_redecide.sql")


def downgrade() -> None:
    run_sql_file("0032_redecide.down.sql")
