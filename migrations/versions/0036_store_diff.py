"""store_diff: a full dedupe writes only the marks that differ from the stored ones
(store_decision), instead of deleting and inserting every mark of the target.

Revision ID: 0036_store_diff
Revises: 0035_lookups
Applies sql/0036_store_diff.sql. The downgrade puts back store_decision from revision 34's file.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0036_store_diff"
down_revision = "0035_lookups"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0036_store_diff.sql")


def downgrade() -> None:
    run_sql(function_definitions("0034_counts.sql", ("store_decision",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
