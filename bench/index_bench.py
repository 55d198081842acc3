"""Benchmark ``pgdedup.index`` on generated feed items at several table sizes.

    python bench/index_bench.py [--sizes 50000,200000,600000] [--rows N] [--dsn DSN]

For each size the script drops ``feed_items`` and the ``pgdedup`` schema, loads N rows with
``pgdedup.sample.load`` (then VACUUM ANALYZE, so the index step does not also pay for setting
hint bits), and runs the index step in a fresh Python subprocess. The child reports its own
``ru_maxrss``, so the peak RSS is that of the index step alone (after importing pgdedup), not of
data generation, and each size starts from a clean interpreter. If memory is flat as the table
grows, the loader streams. Wall seconds include migrating the schema and the final bookkeeping.

Without ``--dsn`` a throwaway LocalPostgres is started and stopped. With ``--dsn``, point it at a
scratch database: ``feed_items`` and the ``pgdedup`` schema in it are DROPPED.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import psycopg

from pgdedup import sample
from pgdedup.localpg import LocalPostgres

CHILD = r"""
import json, resource, sys, time
import pgdedup
before = resource.getrusage(resource.RUSAGE_SELF)
t0 = time.perf_counter()
r = pgdedup.index("feed_items", "feed_item_id", ["title", "summary", "content"], dsn=sys.argv[1], progress=False)
seconds = time.perf_counter() - t0
after = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"seconds": seconds, "signed": r.signed, "bands": r.params.bands, "rows": r.params.rows,
                  "base_kb": before.ru_maxrss, "peak_kb": after.ru_maxrss,
                  "cpu": after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime}))
"""


def mb(n: float) -> str:
    return f"{n / 2**20:,.1f}"


def reset_and_load(dsn: str, n: int, seed: int, words: int) -> tuple[float, int]:
    """Drop the previous run's tables, load n rows; return (seconds, source table bytes)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS feed_items")
        conn.execute("DROP SCHEMA IF EXISTS pgdedup CASCADE")
        t0 = time.perf_counter()
        sample.load(conn, n, "feed_items", seed=seed, content_words=words)
        conn.execute("VACUUM (ANALYZE) feed_items")
        seconds = time.perf_counter() - t0
        return seconds, conn.execute("SELECT pg_total_relation_size('feed_items')").fetchone()[0]


def index_in_child(dsn: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, dsn], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"index step failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def machine_info(dsn: str) -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    with psycopg.connect(dsn) as conn:
        server = conn.execute("SHOW server_version").fetchone()[0]
    return (f"cpus: {os.cpu_count()} ({cpu}); python {platform.python_version()} on {platform.platform()}; "
            f"postgresql {server}; psycopg {psycopg.__version__}")


def run(dsn: str, sizes: list[int], seed: int, words: int) -> None:
    print(machine_info(dsn))
    print(f"text columns: title, summary, content (~{words} words per story); index step in a fresh subprocess")
    head = (f"{'rows':>9} {'load s':>7} {'src MB':>8} {'index s':>8} {'rows/s':>7} {'py cpu s':>8} "
            f"{'base RSS MB':>11} {'peak RSS MB':>11} {'sigs MB':>8} {'bands MB':>8} {'b×r':>5}")
    lines = []
    for n in sizes:
        load_s, src_bytes = reset_and_load(dsn, n, seed, words)
        r = index_in_child(dsn)
        with psycopg.connect(dsn) as conn:
            sigs, bands = conn.execute("SELECT pg_total_relation_size('pgdedup.signatures'), "
                                       "pg_total_relation_size('pgdedup.band_keys')").fetchone()
        rate = r["signed"] / r["seconds"]
        lines.append(f"{n:>9} {load_s:>7.1f} {mb(src_bytes):>8} {r['seconds']:>8.1f} {rate:>7.0f} {r['cpu']:>8.1f} "
                     f"{r['base_kb'] / 1024:>11.1f} {r['peak_kb'] / 1024:>11.1f} {mb(sigs):>8} {mb(bands):>8} "
                     f"{r['bands']}×{r['rows']:<3}")
        print(f"  done {n} rows", file=sys.stderr, flush=True)
    print(head, *lines, sep="\n")
    print("base RSS: after importing pgdedup, before indexing; peak RSS: ru_maxrss of the index subprocess; "
          "py cpu s: its user+system CPU (the rest of the wall time is waiting on PostgreSQL)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="50000,200000,600000", help="comma-separated row counts")
    parser.add_argument("--rows", type=int, help="one size only (overrides --sizes)")
    parser.add_argument("--dsn", help="scratch database (feed_items and schema pgdedup are dropped); "
                                      "default: start a throwaway local PostgreSQL")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--content-words", type=int, default=450)
    args = parser.parse_args()
    sizes = [args.rows] if args.rows else [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.dsn:
        run(args.dsn, sizes, args.seed, args.content_words)
        return
    with LocalPostgres() as pg:
        run(pg.dsn, sizes, args.seed, args.content_words)


if __name__ == "__main__":
    main()
