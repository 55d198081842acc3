"""flush: a staged first load's band keys move in by sorted INSERTs of shares of the bands, then DELETE or TRUNCATE.

Revision ID: 0018_flush
Revises: 0017_walk
Applies sql/0018_flush.sql. The downgrade drops it and puts back revision 1's flush_band_keys
from its own file.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0018_flush"
down_revision = "0017_walk"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0018_flush.sql")


def downgrade() -> None:
    run_sql("DROP FUNCTION pgdedup.flush_band_keys(integer, integer[]);")
    run_sql(function_definitions("0001_schema.sql", ("flush_band_keys",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
