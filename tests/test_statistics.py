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
import warnings

import psycopg
import pytest
from psycopg import sql

import pgdedup
from pgdedup import sample

from blocks import blocks_read_by
from clirun import cli, one_line_error
from test_security import APP_GRANTS

ROWS = 3000
TEXT = ["title", "summary", "content"]
#: blocks of pgdedup.signatures a run may read per row of the collection (refreshed: 3-8)
BLOCKS_PER_ROW = 20


#: a reader's grants here: the schema, its tables and the table ``feed``, to SELECT
READER = ("GRANT USAGE ON SCHEMA pgdedup TO {}", "GRANT SELECT ON ALL TABLES IN SCHEMA pgdedup TO {}",
          "GRANT SELECT ON public.feed TO {}")


def _grant(conn: psycopg.Connection, role: str, grants: list[str] | tuple[str, ...]) -> None:
    """Run each ``GRANT ... TO {}`` (or REVOKE) for ``role``."""
    for grant in grants:
        conn.execute(sql.SQL(grant).format(sql.Identifier(role)))


def _runtime(analyze: bool) -> list[str]:
    """A runtime role's grants (tests/test_security.py's, on the table ``feed``), with or without
    ``analyze_as_owner``."""
    return [g for g in APP_GRANTS if "docs" not in g and (analyze or "analyze_as_owner" not in g)] + [
        "GRANT SELECT ON public.feed TO {}"]


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


@pytest.fixture
def stale(conn, beside, make_role) -> str:
    """``beside``, with feed's rows added by a runtime role not granted ``analyze_as_owner``
    (made before revision 46, say): nothing analyzed them, and the statistics know only
    ``briefs``. Returns that role's DSN."""
    name, role_dsn = make_role("ungranted")
    _grant(conn, name, _runtime(analyze=False))
    with psycopg.connect(role_dsn) as app, pytest.warns(pgdedup.StatisticsWarning, match="is not granted"):
        assert pgdedup.collection("feed", app).add_rows(beside) == ROWS
    assert _estimate(conn, "feed") < 10, "the planted statistics cover the collection: nothing tested"
    return role_dsn


def test_rows_added_by_key_beside_an_analyzed_collection_stay_linear(conn, dsn, beside):
    """``add_rows`` into a collection that no index run ever analyzed: the look-ups by key of
    each batch were planned on statistics that knew only ``briefs`` (the queue's index runs
    take the same path, ``tracking.sign_keys``). At this size the cost went into rows compared
    in memory, not blocks read: the test is the planner's own estimate once the rows are in."""
    def add() -> None:
        with psycopg.connect(dsn) as app:
            handle = pgdedup.collection("feed", app)
            for i in range(0, ROWS, 500):
                assert handle.add_rows(beside[i:i + 500]) == len(beside[i:i + 500])
                app.commit()

    add()
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
def test_a_run_on_statistics_that_missed_its_collection_stays_linear(conn, dsn, stale, run):
    """The collection's rows came in with nothing analyzing them (``stale``; also: an ANALYZE,
    by autovacuum or a maintenance job, while they were being added in a transaction not yet
    committed): a dedupe (as psql calls it, or by exact checks of every candidate) or an auto
    ``pairs`` has the tables analyzed first."""
    blocks = blocks_read_by(conn, lambda: run(dsn), "pgdedup.signatures")
    assert blocks < BLOCKS_PER_ROW * ROWS, f"{blocks} blocks of pgdedup.signatures read by {run.__name__}"
    assert _estimate(conn, "feed") > ROWS / 10


def test_a_role_that_may_not_have_the_tables_analyzed_is_told(conn, stale):
    """The role ``stale`` added the rows with gets no ANALYZE (not granted ``analyze_as_owner``):
    its runs say so at INFO level, which reaches a client that asked for warnings only
    (revision 50's NOTICE did not; revision 48's WARNING went to the server log on every call;
    revision 47 said nothing), naming the tables, what their owner can run and who should hold
    the grant, and go on. Python raises it at the caller's own line; the CLI prints one line, or
    one error line under ``-W error``."""
    with pytest.warns(pgdedup.StatisticsWarning) as told:
        assert len(list(pgdedup.pairs("feed", dsn=stale))) > 0
    assert [str(w.message) for w in told] == [
        f'pgdedup.signatures, pgdedup.band_keys not analyzed: their statistics do not cover collection "feed", and '
        f"role ungranted_{conn.info.dbname} is not granted pgdedup.analyze_as_owner; runs may read the whole "
        "collection once per row until the owner or autovacuum analyzes them (the tables' owner can run SELECT "
        "pgdedup.analyze_tables('{signatures,band_keys}'), or grant EXECUTE ON FUNCTION "
        "pgdedup.analyze_as_owner(text[]) to the role that writes the collection's rows)"]
    assert told[0].filename == __file__
    severities: list[str] = []
    with psycopg.connect(stale, autocommit=True, options="-c client_min_messages=warning") as psql:
        psql.add_notice_handler(lambda d: severities.append(d.severity_nonlocalized))
        psql.execute("SELECT pgdedup.refresh_statistics(pgdedup.collection_id('feed'))")
    assert severities == ["INFO"]
    assert _estimate(conn, "feed") < 10
    ran = cli("pairs", "feed", "--dsn", stale)
    assert ran.returncode == 0
    assert ran.stderr.startswith("pgdedup: warning: pgdedup.signatures, pgdedup.band_keys not analyzed: "), ran.stderr
    one_line_error(cli("pairs", "feed", "--dsn", stale, env={"PYTHONWARNINGS": "error"}),
                   "pgdedup.signatures, pgdedup.band_keys not analyzed")


def test_a_read_only_transaction_gets_the_statistics_refreshed_too(conn, dsn, stale):
    """``pairs`` by estimate only reads, and works in a read-only transaction, where PostgreSQL
    allows ANALYZE (unlike on a standby, where pgdedup analyzes nothing)."""
    with psycopg.connect(dsn) as reader:
        reader.read_only = True
        assert len(list(pgdedup.pairs("feed", dsn=reader))) > 0
        reader.commit()
    assert _estimate(conn, "feed") > ROWS / 10


@pytest.mark.parametrize("granted", [True, False])
def test_a_role_that_does_not_own_the_tables_gets_them_analyzed_once_granted(conn, dsn, make_role, granted):
    """PostgreSQL skips a non-owner's ANALYZE with a warning; pgdedup's goes through
    ``pgdedup.analyze_as_owner`` (SECURITY DEFINER), which ANALYZEs only pgdedup's own tables,
    so a runtime role granted it (docs/security.md) leaves statistics that cover its collection.
    One without the grant indexes as before revision 45: its ANALYZE is skipped."""
    name, app_dsn = make_role("runtime")
    sample.load(conn, 200, "briefs", seed=7)
    sample.load(conn, ROWS, "feed", seed=42)
    pgdedup.migrate(dsn)
    conn.execute("ALTER TABLE pgdedup.signatures SET (autovacuum_enabled = off)")
    pgdedup.index("briefs", "feed_item_id", TEXT, dsn=dsn, progress=False)
    _grant(conn, name, _runtime(analyze=granted))
    with warnings.catch_warnings(record=True) as told:
        warnings.simplefilter("always")
        pgdedup.index("feed", "feed_item_id", TEXT, dsn=app_dsn, progress=False)
    assert any(w.category is pgdedup.StatisticsWarning for w in told) != granted
    assert (_estimate(conn, "feed") > ROWS / 10) == granted
    with psycopg.connect(app_dsn, autocommit=True) as runtime:
        with pytest.raises(psycopg.Error, match="only its tables") as refused:
            runtime.execute("SELECT pgdedup.analyze_tables(ARRAY['signatures', 'collections'])")
        assert refused.value.sqlstate == "PD003"
        done = runtime.execute("SELECT pgdedup.analyze_tables(ARRAY['leaders', 'leaders'])").fetchone()[0]
        assert done == (["leaders"] if granted else [])
        if not granted:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                runtime.execute("SELECT pgdedup.analyze_as_owner(ARRAY['leaders'])")
    runs = conn.execute("SELECT analyze_count FROM pg_stat_user_tables WHERE relid = 'pgdedup.leaders'::regclass")
    assert runs.fetchone()[0] == (1 if granted else 0)


def test_a_collection_the_statistics_saw_is_not_analyzed_again_and_again(conn, dsn, beside):
    """A table is analyzed only when the planner expects fewer than 10 of the collection's rows
    (it never saw them), not whenever the estimate is low against the count: one that stays low
    after an ANALYZE (a collection off the list of common values, with more than 100 of them)
    was analyzed again on every call, ~0.1 s each for nothing."""
    with psycopg.connect(dsn) as app:
        pgdedup.collection("feed", app).add_rows(beside[:10])
    conn.execute("ANALYZE pgdedup.signatures, pgdedup.band_keys")
    with psycopg.connect(dsn) as app:
        pgdedup.collection("feed", app).add_rows(beside[10:])
    assert 10 <= _estimate(conn, "feed") < ROWS / 10, "not the case this test is for"
    analyses = ("SELECT sum(analyze_count) FROM pg_stat_user_tables WHERE relid IN "
                "('pgdedup.signatures'::regclass, 'pgdedup.band_keys'::regclass)")
    before = conn.execute(analyses).fetchone()[0]
    cid = conn.execute("SELECT pgdedup.collection_id('feed')").fetchone()[0]
    for _ in range(3):
        assert conn.execute("SELECT pgdedup.refresh_statistics(%s)", (cid,)).fetchone()[0] == []
    assert conn.execute(analyses).fetchone()[0] == before


def test_a_reader_under_row_level_security_looks_buckets_up_by_index(conn, dsn, make_role):
    """``similar`` for a role the tables' policies apply to: the planner may put only leakproof
    comparisons in an index condition ahead of the policy's, and the band each bucket was
    matched on, computed in the comparison (``u.band - 1``: a subtraction can fail, so it is not
    leakproof), made each call read every band key of every collection. Counted as blocks of
    pgdedup.band_keys read by one call, against all of the table's."""
    sample.load(conn, ROWS, "feed", seed=42)
    sample.load(conn, ROWS, "other", seed=7)
    pgdedup.migrate(dsn)
    for table in ("feed", "other"):
        pgdedup.index(table, "feed_item_id", TEXT, dsn=dsn, progress=False)
    reader, reader_dsn = make_role("reader")
    _grant(conn, reader, READER)
    key = conn.execute("SELECT feed_item_id::text FROM feed ORDER BY 1 LIMIT 1").fetchone()[0]
    owners = pgdedup.similar("feed", key=key, dsn=dsn)
    pages = conn.execute("SELECT pg_relation_size('pgdedup.band_keys') / current_setting('block_size')::int"
                         ).fetchone()[0]
    answers = []
    read = blocks_read_by(conn, lambda: answers.append(pgdedup.similar("feed", key=key, dsn=reader_dsn)),
                           "pgdedup.band_keys")
    assert answers == [owners]
    assert read < pages / 2, f"{read} blocks of pgdedup.band_keys ({pages} pages) read by one similar"


def test_a_reader_that_may_not_read_every_table_still_gets_pairs(conn, dsn, make_role):
    """A reader granted SELECT on the schema's tables before ``checked`` and ``leaders`` existed
    (revisions 9 and 11): the statistics check leaves the tables it may not read alone, so
    ``pairs`` answers as the SQL function does (revision 46 failed with "permission denied"),
    and a signature with more buckets than the collection has bands is refused."""
    sample.load(conn, 500, "feed", seed=42)
    pgdedup.migrate(dsn)
    pgdedup.index("feed", "feed_item_id", TEXT, dsn=dsn, progress=False)
    reader, reader_dsn = make_role("reader")
    _grant(conn, reader, READER + ("REVOKE SELECT ON pgdedup.checked, pgdedup.leaders FROM {}",))
    expected = conn.execute("SELECT key_a, key_b, similarity FROM pgdedup.pairs('feed')").fetchall()
    assert expected
    assert [tuple(p) for p in pgdedup.pairs("feed", dsn=reader_dsn)] == expected
    bands = conn.execute("SELECT bands FROM pgdedup.collections WHERE name = 'feed'").fetchone()[0]
    with pytest.raises(psycopg.Error, match="bands, not") as refused:
        conn.execute("SELECT * FROM pgdedup.similar_to_sketch('feed', B'0', %s)", (list(range(bands + 1)),))
    assert refused.value.sqlstate == "PD003"


@pytest.mark.parametrize(("callers", "waited", "local"), [("0", "3s", False), ("200ms", "200ms", False),
                                                          ("10s", "3s", False), ("10s", "3s", True)])
def test_a_table_held_by_another_session_is_left_out_with_a_warning(conn, dsn, callers, waited, local):
    """A table another session holds (a VACUUM, an ANALYZE: SHARE UPDATE EXCLUSIVE) is left out
    after 3 s (longer than PostgreSQL's deadlock_timeout, after which an autovacuum worker in the
    way is cancelled), with a WARNING naming it; the others are analyzed. A caller whose
    lock_timeout is shorter (an application that never waits long for a lock) waits only that
    long (revision 47 waited 3 s), and its setting is as it was afterwards (one made with SET
    LOCAL is gone at the commit)."""
    pgdedup.migrate(dsn)
    said: list[str] = []
    conn.add_notice_handler(lambda d: said.append(f"{d.severity_nonlocalized}: {d.message_primary}"))
    with psycopg.connect(dsn) as other, conn.transaction():
        conn.execute(sql.SQL("SET {} lock_timeout = {}").format(sql.SQL("LOCAL" if local else ""),
                                                               sql.Literal(callers)))
        other.execute("LOCK TABLE pgdedup.signatures IN SHARE UPDATE EXCLUSIVE MODE")
        started = time.monotonic()
        done = conn.execute("SELECT pgdedup.analyze_tables(ARRAY['signatures', 'duplicates'])").fetchone()[0]
        took = time.monotonic() - started
        assert conn.execute("SHOW lock_timeout").fetchone()[0] == callers  # (in the same transaction)
    assert conn.execute("SHOW lock_timeout").fetchone()[0] == ("0" if local else callers)
    assert done == ["duplicates"]
    assert (took < 2.5) if waited == "200ms" else (2.9 < took < 8)
    assert said == [f"WARNING: pgdedup.signatures not analyzed: another session held it for {waited}; "
                        "its statistics stay as they were"]
