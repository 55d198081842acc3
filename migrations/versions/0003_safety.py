"""Safe on production tables: pinned search_path, checked arguments, collection locks, a recorded
marking column, allow-listed key types, row-level security on pgdedup's tables.

Revision ID: 0003_safety
Revises: 0002_dedupe
Applies sql/0003_safety.sql. Revision 3 replaces some of revision 2's functions in place, so the
downgrade undoes 0003 and then re-applies revision 2 (0002.down, 0002): dedupe results
(``pgdedup.duplicates``, ``pgdedup.exact_pairs``) are recomputable and are dropped with it.
"""

from pgdedup.alembic_ops import run_sql_file

revision = "0003_safety"
down_revision = "0002_dedupe"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0003_safety.sql")


def downgrade() -> None:
    for name in ("0003_safety.down.sql", "0002_dedupe.down.sql", "0002_dedupe.sql"):
        run_sql_file(name)
