"""copies: shared_buckets filters the exact copies' rows through a hashed subplan again
(revision 25's array parameter became a constant of the plan: memory work_mem does not bound,
and the whole array in every EXPLAIN of it).

Revision ID: 0027_copies
Revises: 0026_pairs
Applies sql/0027_copies.sql. The downgrade puts back revision 25's shared_buckets from its own file.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0027_copies"
down_revision = "0026_pairs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0027_copies.sql")


def downgrade() -> None:
    run_sql(function_definitions("0025_capped.sql", ("shared_buckets",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
