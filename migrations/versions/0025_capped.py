"""capped: the members of every capped bucket put in keep order in one join (revision 15 read
the whole rank table once per capped bucket), and the rows that do not stand for their text
filtered through a hashed array.

Revision ID: 0025_capped
Revises: 0024_source_check
Applies sql/0025_capped.sql; the downgrade, sql/0025_capped.down.sql.
"""

from pgdedup.alembic_ops import sql_steps

revision = "0025_capped"
down_revision = "0024_source_check"
branch_labels = None
depends_on = None

upgrade, downgrade = sql_steps(revision)
