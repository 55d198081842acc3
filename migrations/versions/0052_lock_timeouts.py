"""lock_timeouts: prepare_mark_column, track and rebuild_band_keys put the caller's lock_timeout
back once their DDL is done (they left their own 5 s or 2 s for the rest of the caller's
transaction).

Revision ID: 0052_lock_timeouts
Revises: 0051_statistics_info
Applies sql/0052_lock_timeouts.sql. The downgrade puts the three bodies back from the files of
revisions 22, 21 and 42 (the first two under their names since revisions 24 and 29).
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0052_lock_timeouts"
down_revision = "0051_statistics_info"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0052_lock_timeouts.sql")


def downgrade() -> None:
    run_sql(function_definitions("0022_unmark.sql", ("prepare_mark_column",),
                                 renamed={"prepare_mark_column": "prepare_mark_column_unchecked"}))
    run_sql(function_definitions("0021_guards.sql", ("track",), renamed={"track": "track_triggers"}))
    run_sql(function_definitions("0042_rebuild_checks.sql", ("rebuild_band_keys",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
