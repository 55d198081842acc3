"""counts: an incremental dedupe stores its result without reading the whole of it again (the
old marks by key look-ups; the duplicates and groups counts kept with the result and adjusted).

Revision ID: 0034_counts
Revises: 0033_capped_predicted
Applies sql/0034_counts.sql. The downgrade puts back the functions it replaced from the files
of revisions 4, 6, 9 and 31 (update_duplicates' body under its revision-24 name), then applies
sql/0034_counts.down.sql.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0034_counts"
down_revision = "0033_capped_predicted"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0034_counts.sql")


def downgrade() -> None:
    run_sql(function_definitions("0004_results.sql", ("store_decision",)))
    run_sql(function_definitions("0006_living.sql", ("store_changes",)))
    run_sql(function_definitions("0009_forward.sql", ("record_result",)))
    run_sql(function_definitions("0031_small_sets.sql", ("update_duplicates_unchecked",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
    run_sql_file("0034_counts.down.sql")
