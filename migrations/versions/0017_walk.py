"""walk: the keep-order walk decides the last heads row by row once a round decides few of them.

Revision ID: 0017_walk
Revises: 0016_walk
Applies sql/0017_walk.sql. The downgrade drops its functions and puts back revision 16's walk
from its own file.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0017_walk"
down_revision = "0016_walk"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0017_walk.sql")


def downgrade() -> None:
    run_sql_file("0017_walk.down.sql")
    run_sql(function_definitions("0016_walk.sql", ("walk",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
