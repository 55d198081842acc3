"""sketches: signatures stored as the low 16 bits of each MinHash value (bit varying), compared
by whole-string bit operations instead of a loop over positions.

Revision ID: 0023_sketches
Revises: 0022_unmark
Applies sql/0023_sketches.sql, which converts the stored signatures in place: one rewrite of
pgdedup.signatures under its ACCESS EXCLUSIVE lock, ~20 us a row for the conversion alone
(`pgdedup migrate` took 9.5 s at 200,000 rows). The downgrade (sql/0023_sketches.down.sql)
turns them back into int4[] of the 16-bit values and has the next index sign every row again
(run it on every collection right after), then puts back revision 2's similarity, revision
3's similar_to, revision 7's similar and revision 6's status view from their own files.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file, view_definition

revision = "0023_sketches"
down_revision = "0022_unmark"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0023_sketches.sql")


def downgrade() -> None:
    run_sql_file("0023_sketches.down.sql")
    run_sql(function_definitions("0002_dedupe.sql", ("similarity",)))
    run_sql(function_definitions("0003_safety.sql", ("similar_to",)))
    run_sql(function_definitions("0007_typed.sql", ("similar",)))
    run_sql(view_definition("0006_living.sql", "status"))
    run_sql("SELECT pgdedup.pin_search_paths();"
            "DO $$ BEGIN IF current_setting('server_version_num')::int >= 150000 THEN "
            "ALTER VIEW pgdedup.status SET (security_invoker = true); END IF; END $$;")
