"""twice: a full dedupe refuses a decision that marks a source key twice (store_decision), as
the primary key of pgdedup.duplicates did before revision 36 wrote only the difference.

Revision ID: 0037_twice
Revises: 0036_store_diff
Applies sql/0037_twice.sql. The downgrade puts back store_decision from revision 36's file.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0037_twice"
down_revision = "0036_store_diff"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0037_twice.sql")


def downgrade() -> None:
    run_sql(function_definitions("0036_store_diff.sql", ("store_decision",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
