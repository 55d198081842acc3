"""guards: the tracking trigger casts only keys of the recorded type; the RLS policy never raises for a
schema the role may not use; the marking column's identity is recorded; track(off) logs queued keys;
keep orders refuse the marking column and read quoted names with commas.

Revision ID: 0021_guards
Revises: 0020_privileges
Applies sql/0021_guards.sql. The downgrade puts back the replaced functions from the files that
defined them, then drops what revision 21 added.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0021_guards"
down_revision = "0020_privileges"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0021_guards.sql")


def downgrade() -> None:
    run_sql(function_definitions("0003_safety.sql", ("may_read_source", "prepare_mark_column")))
    run_sql(function_definitions("0005_contract.sql", ("keep_order_sql",)))
    run_sql(function_definitions("0006_living.sql", ("capture", "track")))
    run_sql("DROP FUNCTION pgdedup.relation_of(text, text);"
            "ALTER TABLE pgdedup.collections DROP COLUMN mark_relid, DROP COLUMN mark_attnum;")
    run_sql("SELECT pgdedup.pin_search_paths();")
