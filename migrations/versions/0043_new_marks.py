"""new_marks: a full dedupe finds the marks it has to insert before inserting any
(store_decision), so that a first run stays linear when pgdedup.duplicates was ANALYZEd empty.

Revision ID: 0043_new_marks
Revises: 0042_rebuild_checks
Applies sql/0043_new_marks.sql. The downgrade puts back store_decision from revision 37's file.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0043_new_marks"
down_revision = "0042_rebuild_checks"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0043_new_marks.sql")


def downgrade() -> None:
    run_sql(function_definitions("0037_twice.sql", ("store_decision",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
