"""refusals: keep orders on a type that cannot be sorted, and unmark on a renamed source or
marking column, are refused before anything is written; drop's refusals can be checked first.

Revision ID: 0057_refusals
Revises: 0056_guard_index
Applies sql/0057_refusals.sql. The downgrade puts keep_order_sql back from revision 55's file
and unmark's body (unmark_unchecked) from revision 53's, then drops the functions 57 added.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0057_refusals"
down_revision = "0056_guard_index"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0057_refusals.sql")


def downgrade() -> None:
    run_sql(function_definitions("0055_trusted_owners.sql", ("keep_order_sql",)))
    run_sql(function_definitions("0053_session_state.sql", ("unmark_unchecked",)))
    run_sql("DROP FUNCTION pgdedup.check_drop(text, boolean); DROP FUNCTION pgdedup.check_unmark(text); "
            "DROP FUNCTION pgdedup.marked_column(pgdedup.collections); DROP FUNCTION pgdedup.orderable(regtype);")
    run_sql("SELECT pgdedup.pin_search_paths();")
