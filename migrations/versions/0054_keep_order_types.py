"""keep_order_types: the keep order an incremental dedupe compares with the stored result names
each column's type and collation, so that an ALTER TABLE changing either (or the key's
collation) makes the next dedupe a full one instead of keeping the old order's marks.

Revision ID: 0054_keep_order_types
Revises: 0053_session_state
Applies sql/0054_keep_order_types.sql. The downgrade puts keep_order_sql back from revision 21's
file and drops typed_column.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0054_keep_order_types"
down_revision = "0053_session_state"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0054_keep_order_types.sql")


def downgrade() -> None:
    run_sql(function_definitions("0021_guards.sql", ("keep_order_sql",)))
    run_sql("DROP FUNCTION pgdedup.typed_column(oid, text);")
    run_sql("SELECT pgdedup.pin_search_paths();")
