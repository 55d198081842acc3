"""large_changes: an incremental dedupe counts the groups it changed from one grouping of the
replaced and new marks (store_changes), so that a large batch of changes stays linear; and a
dedupe after more logged changes than 1/25 of the rows indexed (and than 1,000) runs in full (update_duplicates,
many_changes), which is then the faster of the two.

Revision ID: 0044_large_changes
Revises: 0043_new_marks
Applies sql/0044_large_changes.sql. The downgrade puts back store_changes from revision 34's
file and update_duplicates from revision 24's, and drops many_changes.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0044_large_changes"
down_revision = "0043_new_marks"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0044_large_changes.sql")


def downgrade() -> None:
    run_sql(function_definitions("0034_counts.sql", ("store_changes",)))
    run_sql(function_definitions("0024_source_check.sql", ("update_duplicates",)))
    run_sql("DROP FUNCTION pgdedup.many_changes(integer, text);")
    run_sql("SELECT pgdedup.pin_search_paths();")
