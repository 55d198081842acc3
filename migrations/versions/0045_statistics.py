"""statistics: pgdedup's tables get planner statistics that cover the collection at work
(refresh_statistics, called by update_duplicates and before pgdedup's dedupe and pairs), and a
role that does not own them can have them analyzed (analyze_tables, SECURITY DEFINER): a run
planned on statistics from before its collection existed nested loops over the whole collection.

Revision ID: 0045_statistics
Revises: 0044_large_changes
Applies sql/0045_statistics.sql. The downgrade puts back update_duplicates from revision 44's
file and drops the three new functions.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0045_statistics"
down_revision = "0044_large_changes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0045_statistics.sql")


def downgrade() -> None:
    run_sql(function_definitions("0044_large_changes.sql", ("update_duplicates",)))
    run_sql("DROP FUNCTION pgdedup.refresh_statistics(integer);")
    run_sql("DROP FUNCTION pgdedup.analyze_tables(text[]);")
    run_sql("DROP FUNCTION pgdedup.statistics_tables();")
    run_sql("SELECT pgdedup.pin_search_paths();")
