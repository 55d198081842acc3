"""Signing on a Dask cluster (``index --scheduler``): a LocalCluster of two worker processes,
started here, against a local run of the same table; and the failures a cluster has for real
(a worker process killed with SIGKILL mid-run, a worker's database session terminated
mid-run, a scheduler that is not there)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import numpy as np
import psycopg
import pytest

import pgdedup
from pgdedup import cluster
from pgdedup.errors import PgdedupError

from clirun import cli_background

distributed = pytest.importorskip("distributed")

WORDS = ("river stone maple cedar harbor lantern meadow signal copper willow orbit canyon "
         "falcon ember tide quartz summit prairie").split()


@pytest.fixture(scope="module")
def scheduler() -> Iterator[tuple[str, "distributed.Client"]]:
    """A Dask LocalCluster of 2 worker processes (1 thread each) and a client to inspect it."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=40) as local, distributed.Client(local) as client:
        yield local.scheduler_address, client


def _fill(conn: psycopg.Connection, rows: int) -> None:
    """Table t: ``rows`` texts of 80 words, every seventh a near-copy of the one before."""
    rng = np.random.default_rng(7)
    texts: list[str] = []
    for i in range(rows):
        words = texts[-1].split()[:-1] + ["edited"] if i % 7 == 6 else list(rng.choice(WORDS, 80))
        texts.append(" ".join(words))
    conn.execute("CREATE TABLE t (id int PRIMARY KEY, body text)")
    with conn.cursor().copy("COPY t (id, body) FROM STDIN") as copy:
        for i, text in enumerate(texts):
            copy.write_row((i, text))


def _dump(conn: psycopg.Connection, name: str) -> tuple[list, list]:
    rows = conn.execute(
        "SELECT row_key, row_id, source_md5, signature, buckets, text_hash, feature_count FROM pgdedup.signatures "
        "JOIN pgdedup.collections USING (collection_id) WHERE name = %s ORDER BY row_id", (name,)).fetchall()
    bands = conn.execute("SELECT band, bucket, row_id FROM pgdedup.band_keys JOIN pgdedup.collections "
                         "USING (collection_id) WHERE name = %s ORDER BY 1, 2, 3", (name,)).fetchall()
    return rows, bands


def _signed(conn: psycopg.Connection, name: str) -> int:
    return conn.execute("SELECT count(*) FROM pgdedup.signatures JOIN pgdedup.collections USING (collection_id) "
                        "WHERE name = %s", (name,)).fetchone()[0]


def test_cluster_stores_what_a_local_run_stores(conn, dsn, scheduler):
    address, client = scheduler
    _fill(conn, 1200)
    local = pgdedup.index("t", "id", ["body"], name="local", dsn=dsn, chunk_size=100, progress=False)
    before = set(client.get_events())
    result = pgdedup.index("t", "id", ["body"], name="remote", dsn=dsn, chunk_size=100, progress=False,
                           scheduler=address)
    assert (result.source_rows, result.signed) == (local.source_rows, local.signed) == (1200, 1200)
    assert _dump(conn, "remote") == _dump(conn, "local")
    assert len(_dump(conn, "local")[1]) == 1200 * 16
    # the rows were signed by cluster tasks, which reported every chunk they committed
    topics = [t for t in client.get_events() if t.startswith("pgdedup-index-") and t not in before]
    assert len(topics) == 1
    assert sum(msg for _, msg in client.get_events(topics[0])) == 1200
    # marks follow from the stored rows: the same as the local collection's
    for name in ("local", "remote"):
        pgdedup.dedupe(name, dsn=dsn, alter=False)
    view = "SELECT id, duplicate_of FROM pgdedup.{}_duplicates ORDER BY id"
    assert conn.execute(view.format("remote")).fetchall() == conn.execute(view.format("local")).fetchall() != []


def _wait_for_rows(conn: psycopg.Connection, name: str, proc: "os.PathLike | object", least: int) -> int:
    """Poll until collection ``name`` has at least ``least`` signed rows (the run is mid-way)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            n = _signed(conn, name)
        except psycopg.Error:
            n = 0
        if n >= least:
            return n
        assert proc.poll() is None, proc.communicate()  # type: ignore[attr-defined]
        time.sleep(0.02)
    raise AssertionError("the run never got going")


def _worker_session_terminated(conn: psycopg.Connection) -> int:
    return conn.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                        "WHERE application_name = 'pgdedup index remote (worker)' AND pid <> pg_backend_pid()"
                        ).fetchone()[0]


@pytest.mark.parametrize("failure", ["kill -9 of a worker process", "a worker's database session terminated"])
def test_a_run_survives_a_failure_mid_run(conn, dsn, scheduler, failure):
    """The CLI runs with --scheduler; mid-run, a Dask worker process gets SIGKILL (its task is
    rescheduled) or the database ends a worker's session (its task raises and is retried). The
    run must finish with exactly the rows of a local run: reruns skip committed chunks."""
    address, client = scheduler
    rows = 6000
    _fill(conn, rows)
    pgdedup.index("t", "id", ["body"], name="local", dsn=dsn, chunk_size=25, progress=False)
    proc = cli_background("index", "t", "--key", "id", "--text", "body", "--name", "remote", "--chunk-size", "25",
                          "--scheduler", address, "--dsn", dsn)
    try:
        seen = _wait_for_rows(conn, "remote", proc, 100)
        if failure.startswith("kill"):
            pid = next(iter(client.run(os.getpid).values()))
            os.kill(pid, signal.SIGKILL)
        else:
            assert _worker_session_terminated(conn) >= 1
        assert seen < rows and _signed(conn, "remote") < rows, "the failure came too late to test anything"
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    signed = int(out.split("rows (")[1].split(" signed")[0])
    assert rows - 25 <= signed <= rows, out  # a chunk committed as its worker died may go uncounted
    assert _dump(conn, "remote") == _dump(conn, "local")
    client.wait_for_workers(2, timeout=60)  # the nanny restarts a killed worker for the next test


def test_an_unreachable_scheduler_fails_before_anything_is_written(conn, dsn, monkeypatch):
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", "2s")
    _fill(conn, 10)
    with pytest.raises(PgdedupError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        pgdedup.index("t", "id", ["body"], dsn=dsn, scheduler="tcp://127.0.0.1:9", progress=False)
    assert conn.execute("SELECT to_regclass('pgdedup.collections')").fetchone()[0] is None
    with pytest.raises(pgdedup.InvalidArgument, match="scheduler must be"):
        pgdedup.index("t", "id", ["body"], dsn=dsn, scheduler="  ", progress=False)
