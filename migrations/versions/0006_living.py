"""Living collections: change tracking (triggers and a queue), a log of what index runs changed,
and a dedupe that re-walks only what changed and gives exactly a full run's marks.

Revision ID: 0006_living
Revises: 0005_contract
Applies sql/0006_living.sql. Revision 6 replaces functions of revision 4 in place, so the
downgrade removes 6's own objects (and the tracking triggers) and rebuilds revisions 4 and 5
from revision 2; dedupe results are dropped with it, as in 0004's downgrade (recomputable).
"""

from pgdedup.alembic_ops import run_sql_file

revision = "0006_living"
down_revision = "0005_contract"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0006_living.sql")


def downgrade() -> None:
    for name in ("0006_living.down.sql", "0004_results.down.sql", "0003_safety.down.sql", "0002_dedupe.down.sql",
                 "0002_dedupe.sql", "0003_safety.sql", "0004_results.sql", "0005_contract.sql"):
        run_sql_file(name)
