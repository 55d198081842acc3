"""resume: an incremental auto decision stops at the closure step that meets ambiguous pairs
without an exact check and goes on from it after the checks (decide_changes, judge_step,
closure_state), instead of deciding the region again; probable_unchecked and judge_pairs go.

Revision ID: 0039_resume
Revises: 0038_edges
Applies sql/0039_resume.sql. The downgrade puts back decide_changes, judge_pairs and
probable_unchecked from the files of revisions 35, 31 and 33, and drops the two new functions.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0039_resume"
down_revision = "0038_edges"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0039_resume.sql")


def downgrade() -> None:
    run_sql(function_definitions("0035_lookups.sql", ("decide_changes",)))
    run_sql(function_definitions("0031_small_sets.sql", ("judge_pairs",)))
    run_sql(function_definitions("0033_capped_predicted.sql", ("probable_unchecked",)))
    run_sql("DROP FUNCTION pgdedup.judge_step(integer, double precision, text);"
            "DROP FUNCTION pgdedup.closure_state();")
    run_sql("SELECT pgdedup.pin_search_paths();")
