"""Planner statistics that cover the collection at work (revision 45, pgdedup/statistics.py).

PostgreSQL plans a run's statements on the statistics of the last ANALYZE of pgdedup's tables.
When that ANALYZE did not see the collection, the planner takes it for one row and nests loops
that read all of it once per row: quadratic. Counted here as blocks of ``pgdedup.signatures``
read (pg_statio), not timed: with the statistics left as planted, the runs on 3,000 rows below
read 0.9-1.6 million blocks; refreshed, under 10,000. Adding rows by key went quadratic in rows
compared in memory, not in blocks, at this size: there the test is the planner's own estimate
of the collection (EXPLAIN) once the rows are in."""

from __future__ import annotations

import time
from collections.abc import Callable

import psycopg
import pytest
from psycopg import sql

import pgdedup
from pgdedup import sample

from crashes import wait_for
from test_security import APP_GRANTS

ROWS = 3000
TEXT = ["title", "summary", "content"]
#: blocks of pgdedup.signatures a run may read per row of the collection (refreshed: 3-8)
BLOCKS_PER_ROW = 20
BLOCKS = ("SELECT heap_blks_hit + heap_blks_read + idx_blks_hit + idx_blks_read FROM pg_statio_user_tables "
          "WHERE relid = 'pgdedup.signatures'::regclass")


def _blocks_read_by(conn: psycopg.Connection, work: Callable[[], object]) -> int:
    """Blocks of pgdedup.signatures that ``work`` (on sessions of its own, which send their
    counts as they end) read, once the counts have settled. (``conn`` is in autocommit: each
    statement reads the counts afresh.)"""
    before = conn.execute(BLOCKS).fetchone()[0]
    work()
    wait_for(conn, f"SELECT ({BLOCKS}) <> %s", (before,), timeout=10)
    last = None
    while True:  # (the run's other sessions may still be sending theirs)
        now = conn.execute(BLOCKS).fetchone()[0]
        if now == last:
            return now - before
        last = now
        time.sleep(0.7)


def _estimate(conn: psycopg.Connection, name: str) -> float:
    """The planner's estimate of the collection's rows in pgdedup.signatures."""
    cid = conn.execute("SELECT pgdedup.collection_id(%s)", (name,)).fetchone()[0]
    plan = conn.execute("EXPLAIN (FORMAT JSON) SELECT 1 FROM pgdedup.signatures WHERE collection_id = %s",
                        (cid,)).fetchone()[0]
    return plan[0]["Plan"]["Plan Rows"]


@pytest.fixture
def beside(conn, dsn) -> list[str]:
    """A small collection ``briefs``, indexed (so ANALYZEd) first; an empty table ``feed`` made
    a collection, and then filled with ROWS rows (not signed); returns feed's keys."""
    sample.load(conn, 200, "briefs", seed=7)
    sample.load(conn, ROWS, "feed_source", seed=42)
    conn.execute("CREATE TABLE feed (LIKE feed_source INCLUDING ALL)")
    pgdedup.migrate(dsn)
    for table in ("signatures", "band_keys"):  # the statistics stay as each test sets them
        conn.execute(sql.SQL("ALTER TABLE pgdedup.{} SET (autovacuum_enabled = off)").format(sql.Identifier(table)))
    pgdedup.index("briefs", "feed_item_id", TEXT, dsn=dsn, progress=False)
    pgdedup.index("feed", "feed_item_id", TEXT, dsn=dsn, progress=False)
    conn.execute("INSERT INTO feed SELECT * FROM feed_source")
    conn.execute("ANALYZE feed")
    return [r[0] for r in conn.execute("SELECT feed_item_id::text FROM feed ORDER BY 1")]


def test_rows_added_by_key_beside_an_analyzed_collection_stay_linear(conn, dsn, beside):
    """``add_rows`` into a collection that no index run ever analyzed: the look-ups by key of
    each batch were planned on statistics that knew only ``briefs`` (the queue's index runs
    take the same path, ``tracking.sign_keys``)."""
    def add() -> None:
        with psycopg.connect(dsn) as app:
            handle = pgdedup.collection("feed", app)
            for i in range(0, ROWS, 500):
                assert handle.add_rows(beside[i:i + 500]) == len(beside[i:i + 500])
                app.commit()

    blocks = _blocks_read_by(conn, add)
    assert blocks < BLOCKS_PER_ROW * ROWS, f"{blocks} blocks of pgdedup.signatures read to add {ROWS} rows"
    assert _estimate(conn, "feed") > ROWS / 10


def _update_duplicates_in_psql(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as psql:
        kind = psql.execute("SELECT kind FROM pgdedup.update_duplicates('feed', false, NULL, NULL, "
                            "'duplicate_of', 100, true, 'estimate')").fetchone()[0]
        assert kind == "full"


def _exact_dedupe(dsn: str) -> None:
    assert pgdedup.dedupe("feed", alter=False, verify="exact", dsn=dsn).duplicates > 0


def _auto_pairs(dsn: str) -> None:
    assert len(list(pgdedup.pairs("feed", verify="auto", dsn=dsn))) > 0


@pytest.mark.parametrize("run", [_update_duplicates_in_psql, _exact_dedupe, _auto_pairs])
def test_a_run_on_statistics_that_missed_its_collection_stays_linear(conn, dsn, beside, run):
    """The statistics were taken while the collection's rows were being added in a transaction
    not yet committed (an ANALYZE, by autovacuum or a maintenance job, sees none of them): a
    dedupe (as psql calls it, or by exact checks of every candidate) or an auto ``pairs`` has
    them analyzed first."""
    with psycopg.connect(dsn) as app:
        assert pgdedup.collection("feed", app).add_rows(beside) == ROWS
        conn.execute("ANALYZE pgdedup.signatures, pgdedup.band_keys")
    assert _estimate(conn, "feed") < 10, "the planted statistics cover the collection: nothing tested"
    blocks = _blocks_read_by(conn, lambda: run(dsn))
    assert blocks < BLOCKS_PER_ROW * ROWS, f"{blocks} blocks of pgdedup.signatures read by {run.__name__}"
    assert _estimate(conn, "feed") > ROWS / 10


def test_a_read_only_transaction_gets_the_statistics_refreshed_too(conn, dsn, beside):
    """``pairs`` by estimate only reads, and works in a read-only transaction, where PostgreSQL
    allows ANALYZE (unlike on a standby, where pgdedup analyzes nothing)."""
    with psycopg.connect(dsn) as app:
        pgdedup.collection("feed", app).add_rows(beside)
    assert _estimate(conn, "feed") < 10, "the planted statistics cover the collection: nothing tested"
    with psycopg.connect(dsn) as reader:
        reader.read_only = True
        assert len(list(pgdedup.pairs("feed", dsn=reader))) > 0
        reader.commit()
    assert _estimate(conn, "feed") > ROWS / 10


def test_a_role_that_does_not_own_the_tables_gets_them_analyzed(conn, dsn, make_role):
    """PostgreSQL skips a non-owner's ANALYZE with a warning; pgdedup's goes through
    ``pgdedup.analyze_tables`` (SECURITY DEFINER), which ANALYZEs only pgdedup's own tables, so a
    runtime role's index run leaves statistics that cover its collection."""
    name, app_dsn = make_role("runtime")
    sample.load(conn, 200, "briefs", seed=7)
    sample.load(conn, ROWS, "feed", seed=42)
    pgdedup.migrate(dsn)
    conn.execute("ALTER TABLE pgdedup.signatures SET (autovacuum_enabled = off)")
    pgdedup.index("briefs", "feed_item_id", TEXT, dsn=dsn, progress=False)
    for grant in APP_GRANTS[:3] + ("GRANT SELECT ON public.feed TO {}",):
        conn.execute(sql.SQL(grant).format(sql.Identifier(name)))
    pgdedup.index("feed", "feed_item_id", TEXT, dsn=app_dsn, progress=False)
    assert _estimate(conn, "feed") > ROWS / 10
    with psycopg.connect(app_dsn, autocommit=True) as runtime:
        with pytest.raises(psycopg.Error, match="only its tables") as refused:
            runtime.execute("SELECT pgdedup.analyze_tables(ARRAY['signatures', 'collections'])")
        assert refused.value.sqlstate == "PD003"
        assert runtime.execute("SELECT pgdedup.analyze_tables(ARRAY['leaders'])").fetchone()[0] == ["leaders"]
    runs = conn.execute("SELECT analyze_count FROM pg_stat_user_tables WHERE relid = 'pgdedup.leaders'::regclass")
    assert runs.fetchone()[0] >= 1


def test_a_table_held_by_another_session_is_left_out_not_waited_for(conn, dsn):
    """A table another session holds (a VACUUM, an ANALYZE: SHARE UPDATE EXCLUSIVE) is skipped
    after a second instead of holding up the run; the others are analyzed."""
    pgdedup.migrate(dsn)
    with psycopg.connect(dsn) as other:
        other.execute("LOCK TABLE pgdedup.signatures IN SHARE UPDATE EXCLUSIVE MODE")
        started = time.monotonic()
        done = conn.execute("SELECT pgdedup.analyze_tables(ARRAY['signatures', 'duplicates'])").fetchone()[0]
        assert done == ["duplicates"]
        assert 0.9 < time.monotonic() - started < 5
