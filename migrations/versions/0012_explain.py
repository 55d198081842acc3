"""explain: what the stored signatures say about two rows (estimate, feature counts, shared bands).

Revision ID: 0012_explain
Revises: 0011_auto
Applies sql/0012_explain.sql; the downgrade (sql/0012_explain.down.sql) drops the function.
"""

from pgdedup.alembic_ops import sql_steps

revision = "0012_explain"
down_revision = "0011_auto"
branch_labels = None
depends_on = None

upgrade, downgrade = sql_steps(revision)
