"""unseen_writes: whether a keep-order column can be sorted is asked of its base type, never
by a cast to a domain (whose CHECK's functions planning the cast would run); capture's
"compare every row" entries also make the next dedupe decide in full.

Revision ID: 0059_unseen_writes
Revises: 0058_lost_tracking
Applies sql/0059_unseen_writes.sql. The downgrade puts orderable back from revision 57's file
and capture from revision 58's.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0059_unseen_writes"
down_revision = "0058_lost_tracking"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0059_unseen_writes.sql")


def downgrade() -> None:
    run_sql(function_definitions("0057_refusals.sql", ("orderable",)))
    run_sql(function_definitions("0058_lost_tracking.sql", ("capture",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
