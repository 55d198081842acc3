"""Results that belong to the index they came from; one result per target (in-place column,
non-invasive view); exact verification on dedupe's own candidates; drop and unmark.

Revision ID: 0004_results
Revises: 0003_safety
Applies sql/0004_results.sql. Revisions 3 and 4 replace functions of revision 2 in place, so the
downgrade removes 4's own objects and rebuilds revision 3 from revision 2 (0003.down, 0002.down,
0002, 0003): dedupe results and recorded marking columns are dropped with it (results are
recomputable; a column no longer recorded is refused for marking until it is empty again).
"""

from pgdedup.alembic_ops import run_sql_file

revision = "0004_results"
down_revision = "0003_safety"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0004_results.sql")


def downgrade() -> None:
    for name in ("0004_results.down.sql", "0003_safety.down.sql", "0002_dedupe.down.sql", "0002_dedupe.sql",
                 "0003_safety.sql"):
        run_sql_file(name)
