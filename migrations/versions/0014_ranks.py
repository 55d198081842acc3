"""ranks: a full dedupe ranks the rows once (rank_rows keeps the ranking update_duplicates just made).

Revision ID: 0014_ranks
Revises: 0013_distributable
Applies sql/0014_ranks.sql. The downgrade drops rank_rows and puts back revision 4's from
sql/0004_results.sql.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0014_ranks"
down_revision = "0013_distributable"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0014_ranks.sql")


def downgrade() -> None:
    run_sql_file("0014_ranks.down.sql")
    run_sql(function_definitions("0004_results.sql", ("rank_rows",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
