"""statistics_rights: refresh_statistics leaves alone the pgdedup tables the caller may not read
(a reader's pairs failed with "permission denied" on checked or leaders), analyze_as_owner leaves
a table out on a deadlock as on a lock not had, and similar_to_sketch refuses more buckets than
the collection has bands (PD003).

Revision ID: 0047_statistics_rights
Revises: 0046_statistics_check
Applies sql/0047_statistics_rights.sql. The downgrade puts the three functions back from revision
46's file.
"""

from pgdedup.alembic_ops import function_definitions, run_sql, run_sql_file

revision = "0047_statistics_rights"
down_revision = "0046_statistics_check"
branch_labels = None
depends_on = None


def upgrade() -> None:
    run_sql_file("0047_statistics_rights.sql")


def downgrade() -> None:
    run_sql(function_definitions("0046_statistics_check.sql",
                                 ("analyze_as_owner", "refresh_statistics", "similar_to_sketch")))
    run_sql("SELECT pgdedup.pin_search_paths();")
