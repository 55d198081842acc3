"""source_lock: the lock of a source another role owns is SHARE UPDATE EXCLUSIVE (held against
CREATE INDEX, CREATE STATISTICS and ATTACH PARTITION, through which its owner could add code the
planner runs while pgdedup reads); writers of one table's marks queue on an advisory lock of the
table (two collections of one table marking at once could deadlock); a marking column's name
longer than the server keeps is refused.

Revision ID: 0028_source_lock
Revises: 0027_copies
Applies sql/0028_source_lock.sql; the downgrade, sql/0028_source_lock.down.sql, and revision 24's
three functions from its own file.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0028_source_lock"
down_revision = "0027_copies"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0028_source_lock.sql")


def downgrade() -> None:
    run_sql_file("0028_source_lock.down.sql")
    run_sql(function_definitions("0024_source_check.sql", ("lock_source", "guard_marking", "unmark")))
    run_sql("SELECT pgdedup.pin_search_paths();")
