"""trusted_owners: the session guard of revision 53 trusts a pgdedup temp table whose owner may
act as the current role (a call as a superuser, then as a runtime role, in one transaction), and
keep_order_sql raises PD007 when the key column is gone.

Revision ID: 0055_trusted_owners
Revises: 0054_keep_order_types
Applies sql/0055_trusted_owners.sql. The downgrade puts both functions back from the files of
revisions 53 and 54.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0055_trusted_owners"
down_revision = "0054_keep_order_types"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0055_trusted_owners.sql")


def downgrade() -> None:
    run_sql(function_definitions("0053_session_state.sql", ("guard_temp_tables",)))
    run_sql(function_definitions("0054_keep_order_types.sql", ("keep_order_sql",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
