"""lost_tracking: writes made while a tracked source had another name queue "compare every
row"; tracking_intact tells whether the source carries its collection's triggers.

Revision ID: 0058_lost_tracking
Revises: 0057_refusals
Applies sql/0058_lost_tracking.sql. The downgrade puts capture back from revision 21's file and
drops tracking_intact.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0058_lost_tracking"
down_revision = "0057_refusals"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0058_lost_tracking.sql")


def downgrade() -> None:
    run_sql(function_definitions("0021_guards.sql", ("capture",)))
    run_sql("DROP FUNCTION pgdedup.tracking_intact(integer);")
    run_sql("SELECT pgdedup.pin_search_paths();")
