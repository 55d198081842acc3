"""small_sets: verify "auto" checks exactly every candidate pair in which a text has fewer
features than the signature has positions (its estimate's spread is wider than auto_band
assumes), from a lower estimate up; estimated_pairs reports the smaller feature count.

Revision ID: 0031_small_sets
Revises: 0030_hold
Applies sql/0031_small_sets.sql; the downgrade, sql/0031_small_sets.down.sql, then the
functions it replaced from the files of revisions 11, 12, 15 and 20 (update_duplicates'
body under its revision-24 name, update_duplicates_unchecked).
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0031_small_sets"
down_revision = "0030_hold"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0031_small_sets.sql")


def downgrade() -> None:
    run_sql_file("0031_small_sets.down.sql")
    run_sql(function_definitions("0020_privileges.sql", ("estimated_pairs",)))
    run_sql(function_definitions("0011_auto.sql", ("unchecked_pairs", "probable_unchecked", "edge_floor", "judge_pairs")))
    run_sql(function_definitions("0012_explain.sql", ("explain",)))
    run_sql(function_definitions("0015_candidates.sql", ("auto_pairs",)))
    run_sql(function_definitions("0015_candidates.sql", ("update_duplicates",))
            .replace("pgdedup.update_duplicates(", "pgdedup.update_duplicates_unchecked("))
    run_sql("SELECT pgdedup.pin_search_paths();")
