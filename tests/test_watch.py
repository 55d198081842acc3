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


def test_a_watcher_killed_mid_batch_leaves_work_a_restart_finishes(dsn):
    """SIGKILL while the batch's marking waits on a row lock the test holds: index has consumed
    the queue, the dedupe transaction dies with the process; the next watcher finishes."""
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
            assert probe.execute("SELECT count(*) FROM pgdedup.queue").fetchone()[0] == 0  # indexed already
        _stop(watcher, signal.SIGKILL)
    finally:
        blocker.close()
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
            server.restart()
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
