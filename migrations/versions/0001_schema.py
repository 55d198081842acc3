"""Collections, signatures, band keys, run history.

Revision ID: 0001_schema
Revises: 
Applies sql/0001_schema.sql; downgrade applies sql/0001_schema.down.sql.
"""

from pgdedup.alembic_ops import sql_steps

revision = "0001_schema"
down_revision = None
branch_labels = None
depends_on = None

upgrade, downgrade = sql_steps(revision)
