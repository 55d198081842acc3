"""walk: the keep-order walk decided set by set (heads in topological rounds) instead of row by row.

Revision ID: 0016_walk
Revises: 0015_candidates
Applies sql/0016_walk.sql. The downgrade puts back revision 9's walk from its own file.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0016_walk"
down_revision = "0015_candidates"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0016_walk.sql")


def downgrade() -> None:
    run_sql(function_definitions("0009_forward.sql", ("walk",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
