"""distributable: signatures' identity is (collection_id, row_id), the key a plain index.

Revision ID: 0013_distributable
Revises: 0012_explain
Applies sql/0013_distributable.sql (rebuilds two indexes of pgdedup.signatures under an
exclusive lock on that table only: seconds per million rows); the downgrade restores the
unique key.
"""

from pgdedup.alembic_ops import sql_steps

revision = "0013_distributable"
down_revision = "0012_explain"
branch_labels = None
depends_on = None

upgrade, downgrade = sql_steps(revision)
