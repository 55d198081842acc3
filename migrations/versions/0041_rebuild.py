"""rebuild: a large first load into an empty band_keys moves its staged keys in by one insert
and then adds the table's primary key, instead of sorted inserts into the key
(rebuild_band_keys).

Revision ID: 0041_rebuild
Revises: 0040_own_state
Applies sql/0041_rebuild.sql. The downgrade drops the function (the loader of revision 40
never calls it).
"""

from pgdedup.alembic_ops import run_sql, run_sql_file

revision = "0041_rebuild"
down_revision = "0040_own_state"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0041_rebuild.sql")


def downgrade() -> None:
    run_sql("DROP FUNCTION pgdedup.rebuild_band_keys(integer);")
