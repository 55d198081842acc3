"""Signing on a cluster against local workers, the server's storing rate, and what each row costs.

    python bench/scaling.py [--rows 100000,1000000] [--repeat 3] [--dsn DSN]

For each table size, generated ``feed_items`` (``sample.load``, seed 42, then VACUUM ANALYZE) in
a throwaway LocalPostgres (or ``--dsn``: a scratch database whose ``feed_items`` table and
``pgdedup`` schema are DROPPED):

Table 1, index throughput: ``pgdedup.index`` from an empty ``pgdedup`` schema with 1 worker,
2 worker processes, and ``scheduler=`` a Dask LocalCluster of 2 worker processes × 1 thread
(started before each of its runs and stopped after, outside the timed part, as a cluster
exists before a run; Dask's profiler off), each in a fresh subprocess, ``--repeat`` times in
turn; median (min–max) seconds and rows/s.

Table 2, the storing ceiling: one session stores the same rows again, signed beforehand (rows
streamed and signed untimed; ``loader.store_chunk`` timed: serialising, COPY of signatures and
band keys, commit, then the move of the staged band keys). Signing scales with cores until
the workers together store as fast as this.

Table 3, per row and per million rows: VACUUM ANALYZE of the pgdedup tables (what autovacuum
does in time), then a full ``pgdedup.dedupe`` (verify auto, the default; keep order
published_at, feed_item_id) twice, cold (every ambiguous pair checked exactly) and
warm (the checks stored), with the bytes PostgreSQL spilled to temporary files meanwhile
(``pg_stat_database.temp_bytes``); then ``pg_table_size`` (heap + TOAST) and
``pg_indexes_size`` of every pgdedup table holding rows, per source row.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speed import child, machine, table  # noqa: E402  (same directory)

SEED = 42
TEXT = ["title", "summary", "content"]

INDEX_CHILD = """
import json, sys, time
import pgdedup
if __name__ == "__main__":
    dsn, workers, scheduler = sys.argv[1], int(sys.argv[2]), sys.argv[3] or None
    t0 = time.perf_counter()
    r = pgdedup.index("feed_items", "feed_item_id", %r, dsn=dsn, workers=workers, scheduler=scheduler,
                      progress=False)
    print(json.dumps({"seconds": time.perf_counter() - t0, "signed": r.signed}))
""" % TEXT


def spread(values: list[float], fmt: str = "{:,.1f}") -> str:
    """median (min–max)"""
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


@contextmanager
def local_cluster(dask: bool) -> Iterator[str]:
    """The address of a Dask LocalCluster of 2 worker processes × 1 thread, started before the
    timed run and stopped after it (idle workers still cost CPU, which the local runs must not
    share), without Dask's statistical profiler (it samples every thread every 10 ms); "" when
    not ``dask``."""
    if not dask:
        yield ""
        return
    import dask.config
    from distributed import LocalCluster
    with dask.config.set({"distributed.worker.profile.enabled": False}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                         silence_logs=40) as cluster:
        yield cluster.scheduler_address


def index_runs(dsn: str, n: int, repeat: int) -> dict[str, list[float]]:
    """Seconds of each index mode, ``repeat`` rounds of the three in turn (so drift hits all)."""
    import psycopg
    modes = {"1 worker": ("1", False), "2 workers": ("2", False), "Dask, 2 processes": ("2", True)}
    seconds: dict[str, list[float]] = {m: [] for m in modes}
    with psycopg.connect(dsn, autocommit=True) as conn:
        for _ in range(repeat):
            for mode, (workers, dask) in modes.items():
                conn.execute("DROP SCHEMA IF EXISTS pgdedup CASCADE")
                with local_cluster(dask) as address:
                    r = child(["-c", INDEX_CHILD, dsn, workers, address])
                assert r["signed"] == n, r
                seconds[mode].append(r["seconds"])
    return seconds


def store_rate(dsn: str, n: int) -> tuple[float, float]:
    """Store the collection's rows again from one session, signed beforehand; returns (seconds
    storing, seconds signing)."""
    import psycopg
    from pgdedup import collections, loader
    from pgdedup.signer import sign_texts
    with psycopg.connect(dsn, autocommit=True) as conn, psycopg.connect(dsn) as reader:
        coll = collections.get(conn, "feed_items", need_source=True)
        conn.execute("TRUNCATE pgdedup.signatures, pgdedup.band_keys, pgdedup.band_keys_staged, pgdedup.changes")
        conn.execute("VACUUM ANALYZE pgdedup.signatures")
        conn.execute("SELECT pgdedup.lock_collection(%s, true)", (coll.id,))
        reader.execute("SET LOCAL enable_nestloop = off")
        storing = signing = 0.0
        with reader.cursor(name="rows") as cur:
            cur.execute(loader._stream_query(coll.source, coll.id, None, None))
            while rows := cur.fetchmany(loader.DEFAULT_CHUNK):
                t0 = time.perf_counter()
                signed = sign_texts(["\n".join(c for c in r[4:] if c is not None) for r in rows], coll.params)
                t1 = time.perf_counter()
                loader.store_chunk(conn, coll.id, rows, lambda: signed, "band_keys_staged", conn.info.backend_pid)
                storing += time.perf_counter() - t1
                signing += t1 - t0
        t0 = time.perf_counter()
        conn.execute("SELECT pgdedup.flush_band_keys(%s)", (coll.id,))
        storing += time.perf_counter() - t0
        assert conn.execute("SELECT count(*) FROM pgdedup.signatures").fetchone()[0] == n
        conn.execute("SELECT pg_advisory_unlock_all()")
    return storing, signing


def per_row(dsn: str, n: int) -> tuple[list[list[str]], list[list[str]]]:
    """Dedupe cold and warm (seconds, temp bytes), then bytes per row of every pgdedup table."""
    import psycopg
    import pgdedup
    runs = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        for t in ("signatures", "band_keys", "band_keys_staged"):  # what autovacuum would do in time
            conn.execute(f"VACUUM ANALYZE pgdedup.{t}")
        temp = "SELECT temp_bytes FROM pg_stat_database WHERE datname = current_database()"
        for label in ("cold: ambiguous pairs checked", "warm: checks stored"):
            conn.execute("SELECT pg_stat_clear_snapshot()")
            before = conn.execute(temp).fetchone()[0]
            t0 = time.perf_counter()
            r = pgdedup.dedupe("feed_items", keep_order="published_at, feed_item_id", full=True, dsn=dsn)
            seconds = time.perf_counter() - t0
            time.sleep(1)  # statistics reach pg_stat_database within PGSTAT_MIN_INTERVAL
            conn.execute("SELECT pg_stat_clear_snapshot()")
            spilled = conn.execute(temp).fetchone()[0] - before
            runs.append([f"dedupe, {label}", f"{seconds:.1f}", f"{seconds / n * 1e6:,.0f}",
                         f"{spilled / 2**20:,.0f}", f"{r.duplicates:,}"])
        sizes = conn.execute(
            "SELECT c.relname, pg_table_size(c.oid), pg_indexes_size(c.oid) FROM pg_class c "
            "WHERE c.relnamespace = 'pgdedup'::regnamespace AND c.relkind = 'r' ORDER BY 2 + 3 DESC").fetchall()
        source = conn.execute("SELECT pg_total_relation_size('feed_items')").fetchone()[0]
    rows = [[name, f"{heap / n:,.1f}", f"{idx / n:,.1f}", f"{(heap + idx) / n:,.1f}", f"{(heap + idx) / 2**20:,.0f}"]
            for name, heap, idx in sizes if heap + idx > 64 * 1024]
    total = sum(h + i for _, h, i in sizes)
    rows.append(["all pgdedup tables", "", "", f"{total / n:,.1f}", f"{total / 2**20:,.0f}"])
    rows.append(["(source table feed_items)", "", "", f"{source / n:,.1f}", f"{source / 2**20:,.0f}"])
    return runs, rows


def one_size(dsn: str, n: int, repeat: int) -> None:
    import psycopg
    from pgdedup import sample
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS feed_items")
        conn.execute("DROP SCHEMA IF EXISTS pgdedup CASCADE")
        sample.load(conn, n, "feed_items", seed=SEED)
        conn.execute("VACUUM (ANALYZE) feed_items")
    seconds = index_runs(dsn, n, repeat)
    print(f"\nTable 1, {n:,} rows: pgdedup index from an empty schema, {repeat} rounds")
    table(["mode", "seconds", "rows/s", "× 1 worker"],
          [[mode, spread(s), spread([n / x for x in s], "{:,.0f}"),
            f"{statistics.median(seconds['1 worker']) / statistics.median(s):.2f}"] for mode, s in seconds.items()])
    storing, signing = store_rate(dsn, n)
    print(f"\nTable 2, {n:,} rows: storing from one session, rows signed beforehand")
    table(["part", "seconds", "rows/s"],
          [["storing (serialise, COPY, commit; staged band keys moved)", f"{storing:.1f}", f"{n / storing:,.0f}"],
           ["signing, one process (for comparison)", f"{signing:.1f}", f"{n / signing:,.0f}"]])
    runs, rows = per_row(dsn, n)
    print(f"\nTable 3, {n:,} rows: dedupe, and bytes per row")
    table(["run", "seconds", "µs per row", "temp files MB", "duplicates"], runs)
    print()
    table(["table", "heap + TOAST B/row", "indexes B/row", "total B/row", "MB"], rows)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", default="100000,1000000", help="comma-separated table sizes")
    p.add_argument("--repeat", type=int, default=3, help="rounds of the index runs per size")
    p.add_argument("--dsn", help="scratch database (feed_items and schema pgdedup are dropped); default: LocalPostgres")
    args = p.parse_args()
    from pgdedup.localpg import LocalPostgres
    server = None if args.dsn else LocalPostgres()
    dsn = args.dsn or server.start()
    try:
        machine(dsn, ("pgdedup", "distributed", "numpy"))
        for n in (int(s.replace("_", "")) for s in args.rows.split(",") if s.strip()):
            one_size(dsn, n, args.repeat)
    finally:
        if server:
            server.stop()


if __name__ == "__main__":
    main()
