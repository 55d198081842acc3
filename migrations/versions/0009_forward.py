"""The incremental dedupe follows the keep order forward, and stores each capped bucket's leaders.

Revision ID: 0009_forward
Revises: 0008_view
Applies sql/0009_forward.sql. The downgrade removes 0009's own objects and puts back revision 6's
definitions of the four functions 0009 replaced, read from sql/0006_living.sql; results stay.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0009_forward"
down_revision = "0008_view"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0009_forward.sql")


def downgrade() -> None:
    run_sql_file("0009_forward.down.sql")
    run_sql(function_definitions("0006_living.sql", ("walk", "decide_changes", "update_duplicates", "record_result")))
    run_sql("SELECT pgdedup.pin_search_paths(); DROP FUNCTION pgdedup.pin_search_paths();")
