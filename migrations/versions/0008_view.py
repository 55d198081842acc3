"""The non-invasive view lists the duplicates by key and no longer depends on the source table.

Revision ID: 0008_view
Revises: 0007_typed
Applies sql/0008_view.sql (and rebuilds existing views); the downgrade restores revision 4's
create_duplicates_view and drops the views (a later ``dedupe --no-alter`` makes them again).
"""

from pgdedup.alembic_ops import sql_steps

revision = "0008_view"
down_revision = "0007_typed"
branch_labels = None
depends_on = None

upgrade, downgrade = sql_steps(revision)
