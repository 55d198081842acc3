"""Scopes: a collection may be partitioned by a column of its source table.

Revision ID: 0010_scopes
Revises: 0009_forward
Applies sql/0010_scopes.sql; the downgrade (sql/0010_scopes.down.sql) drops the column.
"""

from pgdedup.alembic_ops import sql_steps

revision = "0010_scopes"
down_revision = "0009_forward"
branch_labels = None
depends_on = None

upgrade, downgrade = sql_steps(revision)
