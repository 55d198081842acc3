"""capped_predicted: an incremental auto dedupe checks up front the pairs of a changed text with
the stored leaders of its capped buckets too, so the decision meets no pair without a check in
the common case and decides its region once.

Revision ID: 0033_capped_predicted
Revises: 0032_redecide
Applies sql/0033_capped_predicted.sql. The downgrade puts back revision 31's probable_unchecked
from its own file.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0033_capped_predicted"
down_revision = "0032_redecide"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0033_capped_predicted.sql")


def downgrade() -> None:
    run_sql(function_definitions("0031_small_sets.sql", ("probable_unchecked",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
