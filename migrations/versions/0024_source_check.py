"""source_check: the checks that reading a source cannot run another role's code are SQL
functions (pgdedup.check_source, pgdedup.guard_source), made by the SQL functions that read a
source (find_duplicates, mark_duplicates, update_duplicates, prepare_mark_column, unmark) as
well as by the Python commands.

Revision ID: 0024_source_check
Revises: 0023_sketches
Applies sql/0024_source_check.sql; the downgrade, sql/0024_source_check.down.sql.
"""

from pgdedup.alembic_ops import sql_steps

revision = "0024_source_check"
down_revision = "0023_sketches"
branch_labels = None
depends_on = None

upgrade, downgrade = sql_steps(revision)
