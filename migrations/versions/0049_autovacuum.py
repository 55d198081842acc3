"""autovacuum: autovacuum vacuums pgdedup.signatures and pgdedup.band_keys after 1 % of their rows
changed (inserted, updated or deleted; PostgreSQL's default is 20 %) and analyzes them after 2 %
(default 10 %), so that a living collection's pages stay in the visibility map and its statistics
near its size between full index runs. Options a database administrator set already are kept;
partitioned layouts are left alone.

Revision ID: 0049_autovacuum
Revises: 0048_statistics_notices
Applies sql/0049_autovacuum.sql; the downgrade (sql/0049_autovacuum.down.sql) resets the options
that still have the values it set.
"""

from pgdedup.alembic_ops import run_sql_file

revision = "0049_autovacuum"
down_revision = "0048_statistics_notices"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0049_autovacuum.sql")


def downgrade() -> None:
    run_sql_file("0049_autovacuum.down.sql")
