"""own_state: the state an auto dedupe keeps between its calls (a full run's estimates, an
incremental run's closure) is reused only if this transaction made it (its start recorded in
the marker) and, for the closure, only if no kept table was edited in place since
(closure_state, update_duplicates_unchecked, reusing, rank_rows).

Revision ID: 0040_own_state
Revises: 0039_resume
Applies sql/0040_own_state.sql. The downgrade puts back the four functions from the files of
revisions 39, 34, 15 and 14.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0040_own_state"
down_revision = "0039_resume"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0040_own_state.sql")


def downgrade() -> None:
    run_sql(function_definitions("0039_resume.sql", ("closure_state",)))
    run_sql(function_definitions("0034_counts.sql", ("update_duplicates_unchecked",)))
    run_sql(function_definitions("0015_candidates.sql", ("reusing",)))
    run_sql(function_definitions("0014_ranks.sql", ("rank_rows",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
