"""guard_index: revision 53's session guard finds pgdedup's temp relations through pg_class' name
index instead of scanning the whole catalog.

Revision ID: 0056_guard_index
Revises: 0055_trusted_owners
Applies sql/0056_guard_index.sql. The downgrade puts guard_temp_tables back from revision 55's
file.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0056_guard_index"
down_revision = "0055_trusted_owners"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0056_guard_index.sql")


def downgrade() -> None:
    run_sql(function_definitions("0055_trusted_owners.sql", ("guard_temp_tables",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
