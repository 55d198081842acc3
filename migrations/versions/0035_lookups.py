"""lookups: an incremental decision reads the changed rows' texts once instead of once per bucket
(fill_buckets), and joins each closure step's frontier with the capped buckets' leaders before
their members (decide_changes).

Revision ID: 0035_lookups
Revises: 0034_counts
Applies sql/0035_lookups.sql. The downgrade puts back the two functions from the files of
revisions 6 and 9.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0035_lookups"
down_revision = "0034_counts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0035_lookups.sql")


def downgrade() -> None:
    run_sql(function_definitions("0006_living.sql", ("fill_buckets",)))
    run_sql(function_definitions("0009_forward.sql", ("decide_changes",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
