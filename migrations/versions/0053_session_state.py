"""session_state: pgdedup refuses to work on a session where a temp relation named pgdedup_* is
not the current role's own table (another role's, on a session a pool shares, was trusted),
and write_marks and unmark put the caller's pgdedup.marking back instead of setting it off.

Revision ID: 0053_session_state
Revises: 0052_lock_timeouts
Applies sql/0053_session_state.sql. The downgrade puts the six functions back from the files of
revisions 3, 40, 6 and 22 (the last two bodies under their names since revisions 28 and 24)
and drops guard_temp_tables.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0053_session_state"
down_revision = "0052_lock_timeouts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0053_session_state.sql")


def downgrade() -> None:
    run_sql(function_definitions("0003_safety.sql", ("lock_collection",)))
    run_sql(function_definitions("0040_own_state.sql", ("reusing", "rank_rows", "closure_state")))
    run_sql(function_definitions("0006_living.sql", ("write_marks",), renamed={"write_marks": "write_marks_unlocked"}))
    run_sql(function_definitions("0022_unmark.sql", ("unmark",), renamed={"unmark": "unmark_unchecked"}))
    run_sql("DROP FUNCTION pgdedup.guard_temp_tables();")
    run_sql("SELECT pgdedup.pin_search_paths();")
