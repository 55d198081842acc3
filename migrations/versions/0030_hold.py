"""hold: revision 28's stronger lock of a source moves out of the guards into hold_source, taken
on every table of the source's read set that another role owns (views' tables, partitions,
children too), and only where pgdedup reads the source without writing it (an index run, the
exact checks' reads); the guards' lock_source is revision 24's again; write_marks compares the
whole marking column for a partitioned source too.

Revision ID: 0030_hold
Revises: 0029_catch_up
Applies sql/0030_hold.sql and revision 24's lock_source from its own file; the downgrade drops
the two new functions and puts back revision 28's lock_source and revision 29's write_marks.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0030_hold"
down_revision = "0029_catch_up"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql(function_definitions("0024_source_check.sql", ("lock_source",)))
    run_sql_file("0030_hold.sql")


def downgrade() -> None:
    run_sql("DROP FUNCTION pgdedup.hold_source(text, text); DROP FUNCTION pgdedup.source_relations(oid);")
    run_sql(function_definitions("0028_source_lock.sql", ("lock_source",)))
    run_sql(function_definitions("0029_catch_up.sql", ("write_marks",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
