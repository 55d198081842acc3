"""rebuild_checks: revision 41's rebuild of an empty band_keys checks whether it applies before
asking for any lock (can_rebuild_band_keys), asks for the locks one table at a time for at most
2 s each, and leaves more cases to the sorted inserts (rebuild_band_keys).

Revision ID: 0042_rebuild_checks
Revises: 0041_rebuild
Applies sql/0042_rebuild_checks.sql. The downgrade puts back revision 41's rebuild_band_keys
and drops can_rebuild_band_keys.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0042_rebuild_checks"
down_revision = "0041_rebuild"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0042_rebuild_checks.sql")


def downgrade() -> None:
    run_sql(function_definitions("0041_rebuild.sql", ("rebuild_band_keys",)))
    run_sql("DROP FUNCTION pgdedup.can_rebuild_band_keys(integer);")
    run_sql("SELECT pgdedup.pin_search_paths();")
