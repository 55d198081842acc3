"""pairs: candidate_pairs copies each shared bucket's stored array out once instead of reading
it back from TOAST for every subscript (capped buckets of hundreds of members were quadratic).

Revision ID: 0026_pairs
Revises: 0025_capped
Applies sql/0026_pairs.sql. The downgrade puts back revision 15's candidate_pairs from its own file.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0026_pairs"
down_revision = "0025_capped"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0026_pairs.sql")


def downgrade() -> None:
    run_sql(function_definitions("0015_candidates.sql", ("candidate_pairs",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
