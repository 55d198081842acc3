"""A full dedupe's candidate estimates in the server's parallel workers (sql/0019_parallel.sql).

The estimates themselves are checked against exact Jaccard and brute force elsewhere
(test_oracles_sql.py); here the question is whether sharing the work among parallel workers
changes anything: the marks must be those of a run in one process, the workers must really
have run (auto_explain's plan of the nested query, sent to the client), and the work table
must be left empty.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

import pgdedup
from clirun import cli_background
from crashes import wait_for
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


def _marks(conn, table: str) -> dict[int, int | None]:
    return dict(conn.execute(f"SELECT id, duplicate_of FROM {table}").fetchall())


@contextmanager
def held_after_writing_pairs(conn) -> Iterator[None]:
    """Inside the block, a full dedupe stops (a real lock wait) right after writing its candidate
    pairs into pgdedup.candidates, until the block ends: an AFTER INSERT statement trigger takes
    an advisory lock that this session holds. Trigger and lock are gone on leaving."""
    conn.execute("SELECT pg_advisory_lock(4219)")
    conn.execute("CREATE FUNCTION public.pgdedup_test_hold() RETURNS trigger LANGUAGE plpgsql AS $$ "
                 "BEGIN PERFORM pg_advisory_xact_lock_shared(4219); RETURN NULL; END $$")
    conn.execute("CREATE TRIGGER hold AFTER INSERT ON pgdedup.candidates "
                 "FOR EACH STATEMENT EXECUTE FUNCTION public.pgdedup_test_hold()")
    try:
        yield
    finally:
        conn.execute("SELECT pg_advisory_unlock(4219)")
        conn.execute("DROP TRIGGER hold ON pgdedup.candidates")
        conn.execute("DROP FUNCTION public.pgdedup_test_hold()")


HELD = ("SELECT count(*) = %s FROM pg_stat_activity WHERE application_name LIKE 'pgdedup dedupe%%' "
        "AND wait_event = 'advisory'")  # (how many dedupes wait there)


def test_two_full_dedupes_of_different_collections_at_once_each_mark_as_alone(conn, dsn):
    """Two CLI processes, each a full dedupe of its own collection, both holding their candidate
    pairs in pgdedup.candidates at the same moment: each estimates only its own pairs (its marks
    are those of a run alone), and both leave the table empty."""
    indexed(conn, dsn, groups=30, copies=3, unrelated=60)
    indexed(conn, dsn, table="others", groups=20, copies=5, unrelated=40, seed=11)
    alone = {}
    for table in ("items", "others"):
        pgdedup.dedupe(table, keep_order="published_at, id", verify="estimate", full=True, dsn=dsn)
        alone[table] = _marks(conn, table)
        conn.execute(f"UPDATE {table} SET duplicate_of = NULL")
    assert all(sum(v is not None for v in m.values()) >= 60 for m in alone.values())
    with held_after_writing_pairs(conn):
        runs = [cli_background("dedupe", table, "--keep-order", "published_at, id", "--verify", "estimate",
                               "--full", "--dsn", dsn) for table in ("items", "others")]
        wait_for(conn, HELD, (2,), timeout=60, run=runs[0])
    for run in runs:
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
    assert {table: _marks(conn, table) for table in ("items", "others")} == alone
    assert conn.execute("SELECT count(*) FROM pgdedup.candidates").fetchone()[0] == 0


def test_kill_9_while_the_pairs_are_in_the_work_table_changes_nothing(conn, dsn):
    """SIGKILL of a full dedupe while its candidate pairs sit in pgdedup.candidates: its
    transaction never commits (the marks of the run before stay as they were, no pair is left
    in the table), its session ends, and the rerun marks what the run before marked."""
    indexed(conn, dsn, groups=30, copies=3, unrelated=60)
    before = pgdedup.dedupe("items", keep_order="published_at, id", verify="estimate", dsn=dsn)
    marks = _marks(conn, "items")
    assert before.duplicates >= 60
    with held_after_writing_pairs(conn):
        run = cli_background("dedupe", "items", "--keep-order", "published_at, id", "--verify", "estimate",
                             "--full", "--dsn", dsn)
        wait_for(conn, HELD, (1,), timeout=60, run=run)
        os.killpg(run.pid, signal.SIGKILL)
        run.wait(timeout=30)
    wait_for(conn, "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name LIKE 'pgdedup dedupe%%')",
             timeout=60)
    assert conn.execute("SELECT count(*) FROM pgdedup.candidates").fetchone()[0] == 0
    assert _marks(conn, "items") == marks
    again = pgdedup.dedupe("items", keep_order="published_at, id", verify="estimate", full=True, dsn=dsn)
    assert again.duplicates == before.duplicates and _marks(conn, "items") == marks
    assert conn.execute("SELECT count(*) FROM pgdedup.candidates").fetchone()[0] == 0
