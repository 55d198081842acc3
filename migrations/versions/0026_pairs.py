"""pairs: candidate_pairs copies each shared bucket's stored array out once instead of reading
it back from TOAST for every subscript (capped buckets of hundreds of members were quadratic).

Revision ID: 0026_pairs
Revises: 0025_capped
Applies sql/0026_pairs.sql; the downgrade, sql/0026_pairs.down.sql.
"""

from pgdedup.alembic_ops import sql_steps

revision = "0026_pairs"
down_revision = "0025_capped"
branch_labels = None
depends_on = None

upgrade, downgrade = sql_steps(revision)
