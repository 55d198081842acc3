"""copies: shared_buckets filters the exact copies' rows through a hashed subplan again
(revision 25's array parameter became a constant of the plan: memory work_mem does not bound,
and the whole array in every EXPLAIN of it).

Revision ID: 0027_copies
Revises: 0026_pairs
Applies sql/0027_copies.sql; the downgrade, sql/0027_copies.down.sql.
"""

from pgdedup.alembic_ops import sql_steps

revision = "0027_copies"
down_revision = "0026_pairs"
branch_labels = None
depends_on = None

upgrade, downgrade = sql_steps(revision)
