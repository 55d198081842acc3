"""statistics_info: refresh_statistics tells a role that may not have stale tables analyzed at INFO
level, which reaches the client whatever its client_min_messages (revision 50's NOTICE did not
under client_min_messages = warning).

Revision ID: 0051_statistics_info
Revises: 0050_statistics_notice
Applies sql/0051_statistics_info.sql. The downgrade puts the function back from revision 50's
file.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0051_statistics_info"
down_revision = "0050_statistics_notice"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0051_statistics_info.sql")


def downgrade() -> None:
    run_sql(function_definitions("0050_statistics_notice.sql", ("refresh_statistics",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
