"""catch_up: an incremental dedupe of an untracked collection writes every mark that differs from
the stored one (a row deleted and inserted again came back unmarked for good), and starting to
track a collection makes the next dedupe of each target decide in full (keep-order changes made
while untracked were never re-decided).

Revision ID: 0029_catch_up
Revises: 0028_source_lock
Applies sql/0029_catch_up.sql; the downgrade, sql/0029_catch_up.down.sql, and revision 28's
write_marks from its own file.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0029_catch_up"
down_revision = "0028_source_lock"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0029_catch_up.sql")


def downgrade() -> None:
    run_sql_file("0029_catch_up.down.sql")
    run_sql(function_definitions("0028_source_lock.sql", ("write_marks",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
