"""privileges: a full dedupe uses pgdedup.candidates only when the role holds SELECT, INSERT and DELETE on it.

Revision ID: 0020_privileges
Revises: 0019_parallel
Applies sql/0020_privileges.sql. The downgrade puts back revision 19's estimated_pairs from its
own file.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0020_privileges"
down_revision = "0019_parallel"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0020_privileges.sql")


def downgrade() -> None:
    run_sql(function_definitions("0019_parallel.sql", ("estimated_pairs",)))
    run_sql("SELECT pgdedup.pin_search_paths();")
