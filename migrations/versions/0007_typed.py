"""Keys in SQL in their own type: similar() and similarity() take and give the key's type.

Revision ID: 0007_typed
Revises: 0006_living
Applies sql/0007_typed.sql; the downgrade (sql/0007_typed.down.sql) drops the typed overloads
and puts back revision 3's similar(text, text, …).
"""

from pgdedup.alembic_ops import sql_steps

revision = "0007_typed"
down_revision = "0006_living"
branch_labels = None
depends_on = None

upgrade, downgrade = sql_steps(revision)
