"""Similarity, candidate and verified pairs, similar rows, marking duplicates.

Revision ID: 0002_dedupe
Revises: 0001_schema
Applies sql/0002_dedupe.sql; downgrade applies sql/0002_dedupe.down.sql.
"""

from pgdedup.alembic_ops import sql_steps

revision = "0002_dedupe"
down_revision = '0001_schema'
branch_labels = None
depends_on = None

upgrade, downgrade = sql_steps(revision)
