"""verify "auto": estimates decide clear cases, exact Jaccard (pgdedup.checked) the ambiguous band.

Revision ID: 0011_auto
Revises: 0010_scopes
Applies sql/0011_auto.sql. The downgrade removes 0011's own objects and puts back check_args
(sql/0003_safety.sql), edges (sql/0004_results.sql), judge_pairs, update_duplicates and edge_floor
(sql/0009_forward.sql) from the files that define them.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0011_auto"
down_revision = "0010_scopes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0011_auto.sql")


def downgrade() -> None:
    run_sql_file("0011_auto.down.sql")
    run_sql(function_definitions("0003_safety.sql", ("check_args",)))
    run_sql(function_definitions("0004_results.sql", ("edges",)))
    run_sql(function_definitions("0009_forward.sql", ("judge_pairs", "update_duplicates", "edge_floor")))
    run_sql("SELECT pgdedup.pin_search_paths();")
