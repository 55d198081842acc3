"""capped: the members of every capped bucket put in keep order in one join (revision 15 read
the whole rank table once per capped bucket), and the rows that do not stand for their text
filtered through a hashed array.

Revision ID: 0025_capped
Revises: 0024_source_check
Applies sql/0025_capped.sql. The downgrade puts back revision 15's shared_buckets from its own file.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0025_capped"
down_revision = "0024_source_check"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0025_capped.sql")


def downgrade() -> None:
    run_sql(function_definitions("0015_candidates.sql", ("shared_buckets",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
