"""statistics_notice: refresh_statistics tells a role that may not have stale tables analyzed in a
NOTICE (revision 48's WARNING went to the server log on every call), with a hint naming what the
tables' owner can run and the role that should hold the grant (the one that writes the rows).

Revision ID: 0050_statistics_notice
Revises: 0049_autovacuum
Applies sql/0050_statistics_notice.sql. The downgrade puts the function back from revision 48's
file.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0050_statistics_notice"
down_revision = "0049_autovacuum"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0050_statistics_notice.sql")


def downgrade() -> None:
    run_sql(function_definitions("0048_statistics_notices.sql", ("refresh_statistics",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
