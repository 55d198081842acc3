"""unmark_lock_order: unmark takes the collection's lock before the table's marks lock (behind
a running dedupe it waited with no limit instead of failing at once).

Revision ID: 0060_unmark_lock_order
Revises: 0059_unseen_writes
Applies sql/0060_unmark_lock_order.sql. The downgrade puts unmark back from revision 28's file.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0060_unmark_lock_order"
down_revision = "0059_unseen_writes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0060_unmark_lock_order.sql")


def downgrade() -> None:
    run_sql(function_definitions("0028_source_lock.sql", ("unmark",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
