"""candidates: candidate pairs in one pass over the band table, made once per full dedupe.

Revision ID: 0015_candidates
Revises: 0014_ranks
Applies sql/0015_candidates.sql. The downgrade drops its functions and puts back revision 2's
candidate_pairs and verified_pairs, revision 9's store_leaders and revision 11's edges,
auto_pairs and update_duplicates from their own files.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0015_candidates"
down_revision = "0014_ranks"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0015_candidates.sql")


def downgrade() -> None:
    run_sql_file("0015_candidates.down.sql")
    run_sql(function_definitions("0002_dedupe.sql", ("candidate_pairs", "verified_pairs")))
    run_sql(function_definitions("0009_forward.sql", ("store_leaders",)))
    run_sql(function_definitions("0011_auto.sql", ("edges", "auto_pairs", "update_duplicates")))
    run_sql("SELECT pgdedup.pin_search_paths();")
