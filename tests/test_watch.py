"""``pgdedup watch`` as an operator runs it: a real CLI process, real writers, real signals
(SIGTERM, SIGKILL), a second watcher, and a server restart. After each, the marks equal those of
a full run on the final table."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

import pgdedup
from pgdedup.localpg import LocalPostgres, LocalPostgresError, find_bindir

from clirun import cli, cli_background, one_line_error
from families import PARAMS, text as _text

KEEP = "published_at, id"


def _wait(predicate, timeout: float = 60.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def _setup(dsn: str) -> None:
    rng = random.Random(5)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text, published_at int)")
        for i in range(1, 61):
            conn.execute("INSERT INTO docs VALUES (%s, %s, %s)", (i, _text(rng, i % 4, rng.randrange(3)), i % 7))
    pgdedup.index("docs", "id", ["body"], params=PARAMS, dsn=dsn, progress=False)
    pgdedup.track("docs", dsn=dsn)
    pgdedup.index("docs", dsn=dsn, progress=False)
    pgdedup.dedupe("docs", keep_order=KEEP, dsn=dsn)


def _idle(dsn: str) -> bool:
    """Nothing queued and nothing pending: the watcher has caught up."""
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT NOT EXISTS (SELECT 1 FROM pgdedup.queue) "
                            "AND NOT EXISTS (SELECT 1 FROM pgdedup.pending)").fetchone()[0]


def _listening(dsn: str) -> bool:
    """The watcher's session is up and LISTENing."""
    with psycopg.connect(dsn) as conn:
        return conn.execute("SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = "
                            "'pgdedup watch docs' AND query LIKE '%pgdedup.queue%')").fetchone()[0]


def _marks(dsn: str) -> dict[int, int | None]:
    with psycopg.connect(dsn) as conn:
        return dict(conn.execute("SELECT id, duplicate_of FROM docs ORDER BY id").fetchall())


def _full_marks(dsn: str) -> dict[int, int | None]:
    """The oracle: a full run on the final table (then the marks it wrote)."""
    assert pgdedup.dedupe("docs", keep_order=KEEP, full=True, dsn=dsn).kind == "full"
    return _marks(dsn)


def _write(dsn: str, seed: int, rows: int, first_id: int) -> None:
    """An application writing: inserts (near-copies, some sorting first), edits and deletes."""
    rng = random.Random(seed)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for i in range(rows):
            conn.execute("INSERT INTO docs VALUES (%s, %s, %s)",
                         (first_id + i, _text(rng, rng.randrange(4), rng.randrange(3)), rng.randrange(-2, 7)))
            if i % 5 == 0:
                conn.execute("UPDATE docs SET body = %s WHERE id = %s", (_text(rng, rng.randrange(4), 1),
                                                                         rng.randrange(1, 60)))
            if i % 7 == 0:
                conn.execute("DELETE FROM docs WHERE id = %s", (rng.randrange(1, 60),))


def _stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> tuple[str, str]:
    os.killpg(proc.pid, sig)
    return proc.communicate(timeout=60)


def test_watch_keeps_marks_current_and_stops_on_sigterm(dsn):
    _setup(dsn)
    watcher = cli_background("watch", "docs", "--keep-order", KEEP, "--dsn", dsn)
    try:
        _wait(lambda: _listening(dsn), what="the watcher to start")
        writers = [threading.Thread(target=_write, args=(dsn, seed, 25, 1000 * (seed + 1))) for seed in (1, 2)]
        for w in writers:  # two writers at once
            w.start()
        for w in writers:
            w.join()
        _wait(lambda: _idle(dsn), what="the watcher to catch up")
        second = cli("watch", "docs", "--keep-order", KEEP, "--dsn", dsn, timeout=60)
        one_line_error(second, "collection 'docs' is already watched by pgdedup watch docs (pid ")
    finally:
        out, err = _stop(watcher)
    assert watcher.returncode == 0, err
    lines = out.strip().splitlines()
    assert lines[0].startswith("watching docs: public.docs, marks in public.docs.duplicate_of")
    assert lines[-1].startswith("stopped watching docs after ")
    batches = [line for line in lines if "from commit to mark" in line]
    assert batches and all(" changes (" in line and "marks changed" in line for line in batches)
    assert _marks(dsn) == _full_marks(dsn)


@contextmanager
def _blocked_batch(dsn: str) -> Iterator[subprocess.Popen]:
    """A watcher whose batch's marking waits on a row lock an idle transaction holds (written
    rows queued first): yields the watcher once it waits; the transaction ends on the way out."""
    _setup(dsn)
    _write(dsn, 3, 40, 3000)
    blocker = psycopg.connect(dsn)
    blocker.execute("SELECT id FROM docs FOR UPDATE")
    watcher = cli_background("watch", "docs", "--keep-order", KEEP, "--dsn", dsn)
    try:
        with psycopg.connect(dsn, autocommit=True) as probe:
            _wait(lambda: probe.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = 'pgdedup dedupe docs' "
                "AND wait_event_type = 'Lock')").fetchone()[0], what="the batch to wait on the row lock")
        yield watcher
    finally:
        blocker.close()
        if watcher.poll() is None:
            _stop(watcher)


def test_a_watcher_killed_mid_batch_leaves_work_a_restart_finishes(dsn):
    """SIGKILL while the batch's marking waits on a row lock the test holds: index has consumed
    the queue, the dedupe transaction dies with the process; the next watcher finishes."""
    with _blocked_batch(dsn) as watcher:
        with psycopg.connect(dsn) as probe:
            assert probe.execute("SELECT count(*) FROM pgdedup.queue").fetchone()[0] == 0  # indexed already
        _stop(watcher, signal.SIGKILL)
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT count(*) FROM pgdedup.pending").fetchone()[0] > 0, "the kill left work"
    restarted = cli_background("watch", "docs", "--keep-order", KEEP, "--dsn", dsn)
    try:
        _write(dsn, 4, 10, 4000)
        _wait(lambda: _idle(dsn), what="the restarted watcher to catch up")
    finally:
        _stop(restarted)
    assert restarted.returncode == 0
    assert _marks(dsn) == _full_marks(dsn)


def test_watch_refuses_an_untracked_collection(conn, dsn):
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text, published_at int)")
    conn.execute("INSERT INTO docs VALUES (1, 'one two three four', 1)")
    pgdedup.index("docs", "id", ["body"], params=PARAMS, dsn=dsn, progress=False)
    one_line_error(cli("watch", "docs", "--dsn", dsn, timeout=60), "is not tracked", "pgdedup track docs")


@pytest.mark.skipif(find_bindir() is None, reason="restarting needs a server from system binaries")
def test_watch_survives_a_server_restart():
    server = LocalPostgres()
    try:
        dsn = server.start()
        _setup(dsn)
        watcher = cli_background("watch", "docs", "--keep-order", KEEP, "--dsn", dsn)
        try:
            _wait(lambda: _listening(dsn), what="the watcher to start")
            server.restart(down=4)  # (down longer than the first pause: the reconnect itself fails)
            _write(dsn, 6, 15, 6000)
            _wait(lambda: _idle(dsn), timeout=90, what="the watcher to reconnect and catch up")
        finally:
            out, err = _stop(watcher)
        assert watcher.returncode == 0, err
        assert "connection lost" in out
        assert _marks(dsn) == _full_marks(dsn)
    finally:
        try:
            server.stop()
        except LocalPostgresError:
            pass


def test_watch_api_stops_when_asked(dsn):
    _setup(dsn)
    stop, lines = threading.Event(), []
    thread = threading.Thread(target=pgdedup.watch, args=("docs",),
                              kwargs={"keep_order": KEEP, "dsn": dsn, "stop": stop, "log": lines.append, "poll": 0.2})
    thread.start()
    _write(dsn, 7, 5, 7000)
    _wait(lambda: _idle(dsn) and any("from commit to mark" in line for line in lines), what="a batch")
    stop.set()
    thread.join(timeout=30)
    assert not thread.is_alive() and lines[-1].startswith("stopped watching docs")
    assert _marks(dsn) == _full_marks(dsn)


def _caught_up(dsn: str, target: str = "column") -> bool:
    """Nothing queued, and the watched result has taken in every logged change."""
    with psycopg.connect(dsn) as conn:
        return conn.execute(
            "SELECT NOT EXISTS (SELECT 1 FROM pgdedup.queue) AND NOT EXISTS (SELECT 1 FROM pgdedup.changes ch "
            "JOIN pgdedup.results r USING (collection_id) WHERE r.target = %s AND ch.seq > r.change_seq)",
            (target,)).fetchone()[0]


def test_a_result_of_another_target_does_not_make_empty_batches(dsn):
    """A view result beside the marks (one `dedupe --no-alter`): pgdedup.pending lists what any
    result lacks, so the watcher, which updates only its own, ran ~5 empty batches a second."""
    _setup(dsn)
    pgdedup.dedupe("docs", keep_order=KEEP, alter=False, dsn=dsn)
    watcher = cli_background("watch", "docs", "--keep-order", KEEP, "--dsn", dsn)
    try:
        _wait(lambda: _listening(dsn), what="the watcher to start")
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("UPDATE docs SET body = body || ' edited' WHERE id IN (3, 4)")
        _wait(lambda: _caught_up(dsn), what="the watcher to catch up")
        time.sleep(3)
    finally:
        out, err = _stop(watcher)
    assert watcher.returncode == 0, err
    assert len([line for line in out.splitlines() if "from commit to mark" in line]) == 1, out
    assert _marks(dsn) == _full_marks(dsn)


@pytest.mark.parametrize("how", ["untrack", "drop", "replace"])
def test_a_watcher_stops_with_an_error_when_no_write_can_reach_it(dsn, how):
    """Untracked, dropped, or its source replaced by an ETL load's rename swap (the new table has
    no triggers): the watcher went on "watching" and said nothing."""
    _setup(dsn)
    watcher = cli_background("watch", "docs", "--keep-order", KEEP, "--dsn", dsn)
    try:
        _wait(lambda: _listening(dsn), what="the watcher to start")
        if how == "untrack":
            pgdedup.track("docs", on=False, dsn=dsn)
        elif how == "drop":
            pgdedup.drop("docs", dsn=dsn)
        else:
            with psycopg.connect(dsn) as conn:
                conn.execute("CREATE TABLE docs_new (LIKE docs INCLUDING ALL)")
                conn.execute("INSERT INTO docs_new SELECT * FROM docs")
                conn.execute("ALTER TABLE docs RENAME TO docs_old")
                conn.execute("ALTER TABLE docs_new RENAME TO docs")
        _, err = watcher.communicate(timeout=60)
    finally:
        if watcher.poll() is None:
            _stop(watcher)
    assert watcher.returncode == 1
    assert "pgdedup: error: collection 'docs'" in err and (
        "was dropped while watched" in err or "is not tracked any more" in err), err


def test_a_replaced_source_is_compared_in_full_and_untracked_with_a_warning(conn, dsn):
    """The rename swap of an ETL load: the new table has no triggers, so its writes were never
    queued; index read the empty queue, dedupe ran incrementally, status said tracked (wrong
    marks, no error). Now index says tracking was lost, stops it and compares every row."""
    _setup(dsn)
    conn.execute("CREATE TABLE docs_new (LIKE docs INCLUDING ALL)")
    conn.execute("INSERT INTO docs_new SELECT * FROM docs")
    conn.execute("ALTER TABLE docs RENAME TO docs_old")
    conn.execute("ALTER TABLE docs_new RENAME TO docs")
    conn.commit()
    _write(dsn, 9, 12, 9000)
    proc = cli("index", "docs", "--no-progress", "--dsn", dsn)
    assert proc.returncode == 0, proc.stderr
    assert "pgdedup: warning: collection 'docs': its source public.docs does not carry its tracking triggers" \
        in proc.stderr and "pgdedup track docs" in proc.stderr
    assert "0 rows signed" not in proc.stdout, proc.stdout
    assert not pgdedup.status("docs", dsn=dsn)[0]["tracked"]
    assert conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'docs_old'::regclass "
                        "AND tgname LIKE 'pgdedup_track_%%'").fetchone()[0] == 0, "the old table's triggers go"
    conn.commit()
    pgdedup.dedupe("docs", keep_order=KEEP, dsn=dsn)
    assert pgdedup.index("docs", full=True, dsn=dsn, progress=False).signed == 0, "every row was compared"
    assert _marks(dsn) == _full_marks(dsn)


def test_writes_made_while_the_source_had_another_name_are_not_lost(conn, dsn):
    """Renamed and renamed back: the triggers fired on a table that was not the source by name
    and queued nothing, so those rows were never signed. They queue "compare every row" now."""
    _setup(dsn)
    conn.execute("ALTER TABLE docs RENAME TO docs_migrating")
    conn.execute("INSERT INTO docs_migrating SELECT id + 500, body || ' again', published_at - 9 FROM docs_migrating "
                 "WHERE id <= 10")
    conn.execute("ALTER TABLE docs_migrating RENAME TO docs")
    conn.commit()
    assert pgdedup.index("docs", dsn=dsn, progress=False).signed >= 10
    pgdedup.dedupe("docs", keep_order=KEEP, dsn=dsn)
    assert pgdedup.status("docs", dsn=dsn)[0]["tracked"]
    assert pgdedup.index("docs", full=True, dsn=dsn, progress=False).signed == 0
    assert _marks(dsn) == _full_marks(dsn)


def test_watch_checks_its_settings_before_it_starts(dsn):
    """A typo was found at the first batch, maybe hours later, after "watching …"."""
    _setup(dsn)
    one_line_error(cli("watch", "docs", "--keep-order", "no_such_column", "--dsn", dsn, timeout=60),
                   'keep order column "no_such_column" does not exist')
    one_line_error(cli("watch", "docs", "--threshold", "1.5", "--dsn", dsn, timeout=60), "threshold must be")


def test_a_second_signal_cancels_a_batch_that_waits_on_a_row_lock(dsn):
    """An idle application transaction holds a row the batch must mark: SIGTERM lets the batch
    finish, which waits as long as that transaction stays open; a second one cancels it."""
    with _blocked_batch(dsn) as watcher:
        os.killpg(watcher.pid, signal.SIGTERM)
        time.sleep(2)
        assert watcher.poll() is None, "the first signal lets the batch finish"
        started = time.monotonic()
        _, err = _stop(watcher)
        assert time.monotonic() - started < 20 and watcher.returncode == 130, err
    restarted = cli_background("watch", "docs", "--keep-order", KEEP, "--dsn", dsn)
    try:
        _wait(lambda: _idle(dsn), what="the restarted watcher to catch up")
    finally:
        _stop(restarted)
    assert _marks(dsn) == _full_marks(dsn)


def test_a_write_no_trigger_saw_is_compared_in_full_not_retried_forever(dsn):
    """A write made with session_replication_role = replica fires no trigger; a queued near-copy
    of that row's old text then needs its exact check, which finds the text changed since it was
    signed (StaleResults). The watcher retried that every second, silently, for ever; it now says
    so once and, with nothing queued, runs an index that compares every row."""
    _setup(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        body = conn.execute("SELECT body FROM docs WHERE id = 6").fetchone()[0]
    watcher = cli_background("watch", "docs", "--keep-order", KEEP, "--dsn", dsn)
    try:
        _wait(lambda: _listening(dsn), what="the watcher to start")
        with psycopg.connect(dsn) as conn:
            conn.execute("SET LOCAL session_replication_role = replica")
            conn.execute("UPDATE docs SET body = 'completely different words now' WHERE id = 6")
            conn.commit()
            words = body.split()
            words[5], words[11] = "zz1", "zz2"
            conn.execute("INSERT INTO docs VALUES (800, %s, 90)", (" ".join(words),))
            conn.commit()
        _wait(lambda: _idle(dsn), what="the watcher to catch up")
    finally:
        out, err = _stop(watcher)
    assert watcher.returncode == 0, err
    assert "rows changed in public.docs after they were signed" in out and "comparing every row" in out, out
    assert _marks(dsn) == _full_marks(dsn)


def test_rows_written_to_an_inheritance_child_are_indexed(conn, dsn):
    """The parent's triggers do not see writes addressed to a child table, and index read only
    the queue: the child's rows were never signed. A source with children is compared row by
    row, as a partitioned one is."""
    _setup(dsn)
    conn.execute("CREATE TABLE docs_archive () INHERITS (docs)")
    conn.execute("INSERT INTO docs_archive SELECT id + 700, body || ' archived', published_at - 9 FROM docs "
                 "WHERE id <= 8")
    conn.commit()
    assert pgdedup.index("docs", dsn=dsn, progress=False).signed == 8
    pgdedup.dedupe("docs", keep_order=KEEP, dsn=dsn)
    assert pgdedup.index("docs", full=True, dsn=dsn, progress=False).signed == 0
    assert _marks(dsn) == _full_marks(dsn)


@pytest.mark.parametrize("how", ["rename and back", "disabled triggers"])
def test_keep_order_edits_no_trigger_saw_are_decided_in_full(conn, dsn, how):
    """Only a keep-order column changes, while the source has another name or its triggers are
    disabled: the next index compared every row (texts unchanged: nothing logged) and the next
    dedupe stayed incremental, keeping the old order's marks. It decides in full now."""
    _setup(dsn)
    if how == "rename and back":
        conn.execute("ALTER TABLE docs RENAME TO docs_migrating")
        conn.execute("UPDATE docs_migrating SET published_at = -40 WHERE id BETWEEN 40 AND 60")
        conn.execute("ALTER TABLE docs_migrating RENAME TO docs")
        conn.commit()
        pgdedup.index("docs", dsn=dsn, progress=False)
    else:
        conn.execute("ALTER TABLE docs DISABLE TRIGGER USER")
        conn.execute("UPDATE docs SET published_at = -40 WHERE id BETWEEN 40 AND 60")
        conn.commit()
        with pytest.warns(pgdedup.TrackingLost, match="does not carry its tracking triggers"):
            pgdedup.index("docs", dsn=dsn, progress=False)
    assert pgdedup.dedupe("docs", keep_order=KEEP, dsn=dsn).kind == "full"
    assert _marks(dsn) == _full_marks(dsn)
    assert pgdedup.status("docs", dsn=dsn)[0]["tracked"] is (how == "rename and back")


def test_explain_takes_the_max_bucket_the_marks_were_decided_with(conn, dsn):
    _setup(dsn)
    pgdedup.dedupe("docs", keep_order=KEEP, max_bucket=2, dsn=dsn)
    assert pgdedup.explain("docs", "1", "5", dsn=dsn).max_bucket == 2
    assert pgdedup.explain("docs", "1", "5", max_bucket=7, dsn=dsn).max_bucket == 7


def test_watch_fails_at_once_on_a_server_it_never_reached(tmp_path):
    """Retrying is for a connection lost; a DSN that never worked (no server, no database, a bad
    password) fails at once, as it did before the retries covered connection failures."""
    proc = cli("watch", "docs", "--dsn", f"host={tmp_path} dbname=nothing", timeout=60)
    one_line_error(proc, "cannot connect to PostgreSQL")


def test_a_source_that_is_an_inheritance_child_is_compared_row_by_row(conn, dsn):
    """Writes made through the parent fire none of the child's statement triggers: index read
    the empty queue and those rows kept their old signatures."""
    _setup(dsn)
    conn.execute("CREATE TABLE docs_all (id int, body text, published_at int)")
    conn.execute("ALTER TABLE docs INHERIT docs_all")
    conn.execute("UPDATE docs_all SET body = body || ' edited through the parent' WHERE id <= 5")
    conn.commit()
    assert pgdedup.index("docs", dsn=dsn, progress=False).signed == 5
    pgdedup.dedupe("docs", keep_order=KEEP, dsn=dsn)
    assert _marks(dsn) == _full_marks(dsn)
