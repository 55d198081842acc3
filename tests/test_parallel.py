"""A full dedupe's candidate estimates in the server's parallel workers (sql/0019_parallel.sql).

The estimates themselves are checked against exact Jaccard and brute force elsewhere
(test_oracles_sql.py); here the question is whether sharing the work among parallel workers
changes anything: the marks must be those of a run in one process, the workers must really
have run (auto_explain's plan of the nested query, sent to the client), and the work table
must be left empty.
"""

from __future__ import annotations

import psycopg
import pytest

from planted import indexed

DEDUPE = ("SELECT kind, duplicates FROM pgdedup.update_duplicates('items', true, NULL, 'published_at, id', "
          "'duplicate_of', 100, true, 'estimate')")


def _dedupe(dsn: str, *settings: str) -> tuple[dict[int, int | None], list[str]]:
    """Marks of a full dedupe by estimate in a fresh session with ``settings``, and the
    warnings the server sent during it."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        notices: list[str] = []
        conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
        for setting in settings:
            conn.execute(setting)
        with conn.transaction():
            kind, duplicates = conn.execute(DEDUPE).fetchone()
        assert kind == "full"
        marks = dict(conn.execute("SELECT id, duplicate_of FROM items").fetchall())
        assert sum(v is not None for v in marks.values()) == duplicates
        return marks, notices


def test_parallel_workers_estimate_the_candidates_with_the_marks_of_one_process(conn, dsn):
    indexed(conn, dsn, groups=40, copies=4, unrelated=80)
    alone, _ = _dedupe(dsn, "SET max_parallel_workers_per_gather = 0")
    try:  # auto_explain ships with PostgreSQL's contrib modules; without it, whether workers ran is unseen
        conn.execute("LOAD 'auto_explain'")
    except psycopg.errors.UndefinedFile:
        pytest.skip("auto_explain is not installed on this server")
    shared, plans = _dedupe(
        dsn, "SET max_parallel_workers_per_gather = 2", "SET parallel_setup_cost = 0", "SET parallel_tuple_cost = 0",
        "LOAD 'auto_explain'", "SET auto_explain.log_min_duration = 0", "SET auto_explain.log_analyze = on",
        "SET auto_explain.log_nested_statements = on", "SET auto_explain.log_level = warning")
    estimates = [p for p in plans if "pgdedup.similarity(a.signature, b.signature)" in p and "candidates p" in p]
    assert estimates and all("Workers Launched: 2" in p for p in estimates), plans
    assert shared == alone
    assert sum(v is not None for v in shared.values()) >= 100
    assert conn.execute("SELECT count(*) FROM pgdedup.candidates").fetchone()[0] == 0
