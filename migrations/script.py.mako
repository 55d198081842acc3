"""${message}

Revision ID: ${up_revision}
Revises: ${down_revision | comma,n}
"""

from pgdedup.alembic_ops import sql_steps

revision = ${repr(up_revision)}
down_revision = ${repr(down_revision)}
branch_labels = None
depends_on = None

upgrade, downgrade = sql_steps(revision)
