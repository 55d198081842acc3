"""statistics_check: revision 45's refresh of planner statistics made cheap and bounded (a table
is analyzed when the planner expects fewer than 10 of the collection's at least 100 rows there,
so a collection off the list of common values is no longer analyzed on every call), its ANALYZE
waits 3 s for a lock (past deadlock_timeout, so an autovacuum worker gives way) and warns when it
gives up, and the owner's ANALYZE is a function of its own (analyze_as_owner) whose EXECUTE is
granted, not PUBLIC's. And similar_to_sketch computes the band of each probed bucket before
the join, so that under row-level security its look-ups stay index conditions.

Revision ID: 0046_statistics_check
Revises: 0045_statistics
Applies sql/0046_statistics_check.sql. The downgrade puts back analyze_tables and
refresh_statistics from revision 45's file, similar_to_sketch from revision 23's, and drops
analyze_as_owner.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0046_statistics_check"
down_revision = "0045_statistics"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0046_statistics_check.sql")


def downgrade() -> None:
    run_sql(function_definitions("0045_statistics.sql", ("analyze_tables", "refresh_statistics")))
    run_sql(function_definitions("0023_sketches.sql", ("similar_to_sketch",)))
    run_sql("DROP FUNCTION pgdedup.analyze_as_owner(text[]);")
    run_sql("SELECT pgdedup.pin_search_paths();")
