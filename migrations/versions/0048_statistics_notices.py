"""statistics_notices: analyze_as_owner waits for a table's lock no longer than the caller's
lock_timeout when that is shorter than 3 s (and leaves the caller's setting as it was), and
refresh_statistics warns a role that may not have stale tables analyzed (not granted
analyze_as_owner) instead of leaving it to slow plans without a word.

Revision ID: 0048_statistics_notices
Revises: 0047_statistics_rights
Applies sql/0048_statistics_notices.sql. The downgrade puts both functions back from revision
47's file.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0048_statistics_notices"
down_revision = "0047_statistics_rights"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0048_statistics_notices.sql")


def downgrade() -> None:
    run_sql(function_definitions("0047_statistics_rights.sql", ("analyze_as_owner", "refresh_statistics")))
    run_sql("SELECT pgdedup.pin_search_paths();")
