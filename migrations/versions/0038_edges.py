"""edges: a full decision inside update_duplicates' own run takes its edges' text hashes from
the run's estimated pairs instead of looking up both rows of each edge (decide).

Revision ID: 0038_edges
Revises: 0037_twice
Applies sql/0038_edges.sql. The downgrade puts back decide from revision 6's file.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0038_edges"
down_revision = "0037_twice"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0038_edges.sql")


def downgrade() -> None:
    run_sql(function_definitions("0006_living.sql", ("decide",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
