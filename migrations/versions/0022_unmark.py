"""unmark: only the column pgdedup marked is cleared; a restored table's marks are recognised
when rows were deleted before the dump.

Revision ID: 0022_unmark
Revises: 0021_guards
Applies sql/0022_unmark.sql. The downgrade puts back revision 21's prepare_mark_column and
revision 4's unmark from their own files, then drops the helper.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0022_unmark"
down_revision = "0021_guards"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0022_unmark.sql")


def downgrade() -> None:
    run_sql(function_definitions("0021_guards.sql", ("prepare_mark_column",)))
    run_sql(function_definitions("0004_results.sql", ("unmark",)))
    run_sql("DROP FUNCTION pgdedup.holds_only_its_marks(pgdedup.collections, text);")
    run_sql("SELECT pgdedup.pin_search_paths();")
