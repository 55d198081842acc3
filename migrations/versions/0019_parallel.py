"""parallel: a full dedupe's candidate pairs are estimated by the server's parallel workers.

Revision ID: 0019_parallel
Revises: 0018_flush
Applies sql/0019_parallel.sql. The downgrade drops pgdedup.candidates and puts back revision
11's estimated_pairs from its own file.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0019_parallel"
down_revision = "0018_flush"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0019_parallel.sql")


def downgrade() -> None:
    run_sql("DROP FUNCTION pgdedup.estimated_pairs(integer, integer, boolean); DROP TABLE pgdedup.candidates;")
    run_sql(function_definitions("0011_auto.sql", ("estimated_pairs",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
