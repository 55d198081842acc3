"""The keep order's errors follow the error contract (SQLSTATE PD003, PD006 for a missing source).

Revision ID: 0005_contract
Revises: 0004_results
Applies sql/0005_contract.sql. It only replaces ``pgdedup.keep_order_sql`` with one that raises
the same errors under pgdedup's SQLSTATEs (same signature, same results), so the downgrade keeps
it: revision 4 runs unchanged with it, and a further downgrade rebuilds revision 2's functions
from their own file anyway.
"""

from pgdedup.alembic_ops import run_sql_file

revision = "0005_contract"
down_revision = "0004_results"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0005_contract.sql")


def downgrade() -> None:
    """Nothing to undo (see the module docstring)."""
