"""Benchmark ``pgdedup.index`` on generated feed items at several table sizes.

    python bench/index_bench.py [--sizes 50000,200000,600000] [--rows N] [--workers W] [--dsn DSN]

For each size the script drops ``feed_items`` and the ``pgdedup`` schema, loads N rows with
``pgdedup.sample.load`` (then VACUUM ANALYZE, so the index step does not also pay for setting
hint bits), and runs the index step in a fresh Python subprocess, so the memory figures are of
the index step alone (after importing pgdedup), never of data generation. The loader may spawn
worker processes, so the child samples (psutil, every 0.2 s) the RSS of itself plus all its
descendants: "peak RSS" is the largest such sum, "max proc" the largest single process, and
"cpu s" is user+system CPU of the whole tree (getrusage SELF + CHILDREN). If peak RSS stays flat
as the table grows, the loader streams. Wall seconds include migrating the schema.

Without ``--dsn`` a throwaway LocalPostgres (default settings, shared_buffers 128 MB) is started
and stopped. With ``--dsn``, use a scratch database: ``feed_items`` and schema ``pgdedup`` are DROPPED.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import psycopg

from pgdedup import sample
from pgdedup.localpg import LocalPostgres

CHILD = r"""
import json, resource, sys, threading, time
import psutil, pgdedup
me, peak, done = psutil.Process(), {"sum": 0, "max": 0, "procs": 0}, threading.Event()
def rss_of(p):
    try:
        return p.memory_info().rss
    except psutil.Error:  # exited since children() listed it
        return 0
def sample():
    while not done.is_set():
        procs = [me] + me.children(recursive=True)
        rss = [rss_of(p) for p in procs]
        peak.update(sum=max(peak["sum"], sum(rss)), max=max(peak["max"], *rss), procs=max(peak["procs"], len(procs)))
        done.wait(0.2)
def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime
base, cpu0 = me.memory_info().rss, cpu()
threading.Thread(target=sample, daemon=True).start()
kwargs = {"workers": int(sys.argv[2]) if sys.argv[2] != "default" else None}
t0 = time.perf_counter()
r = pgdedup.index("feed_items", "feed_item_id", ["title", "summary", "content"], dsn=sys.argv[1], progress=False,
                  **kwargs)
seconds = time.perf_counter() - t0
done.set()
print(json.dumps({"seconds": seconds, "signed": r.signed, "bands": r.params.bands, "rows": r.params.rows,
                  "base": base, "cpu": cpu() - cpu0, **peak}))
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


def index_in_child(dsn: str, workers: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, dsn, workers], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"index step failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def machine_info(dsn: str) -> str:
    cpu = platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    with psycopg.connect(dsn) as conn:
        server = conn.execute("SHOW server_version").fetchone()[0]
    root = Path(__file__).resolve().parent.parent
    git = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty"], capture_output=True, text=True)
    return (f"cpus: {os.cpu_count()} ({cpu}); python {platform.python_version()} on {platform.platform()}; "
            f"postgresql {server}; psycopg {psycopg.__version__}; pgdedup at {git.stdout.strip() or '?'}")


def run(dsn: str, sizes: list[int], seed: int, words: int, workers: str = "default") -> None:
    print(machine_info(dsn))
    print(f"text columns: title, summary, content (~{words} words per story); workers: {workers}")
    head = (f"{'rows':>9} {'load s':>7} {'src MB':>8} {'index s':>8} {'rows/s':>7} {'cpu s':>7} {'procs':>5} "
            f"{'base MB':>7} {'peak RSS MB':>11} {'max proc MB':>11} {'sigs MB':>8} {'bands MB':>8} {'load1':>5}  b×r")
    lines = []
    for n in sizes:
        load_s, src_bytes = reset_and_load(dsn, n, seed, words)
        r = index_in_child(dsn, workers)
        with psycopg.connect(dsn) as conn:
            sigs, bands = conn.execute("SELECT pg_total_relation_size('pgdedup.signatures'), "
                                       "pg_total_relation_size('pgdedup.band_keys')").fetchone()
        rate = r["signed"] / r["seconds"]
        lines.append(f"{n:>9} {load_s:>7.1f} {mb(src_bytes):>8} {r['seconds']:>8.1f} {rate:>7.0f} {r['cpu']:>7.1f} "
                     f"{r['procs']:>5} {mb(r['base']):>7} {mb(r['sum']):>11} {mb(r['max']):>11} {mb(sigs):>8} "
                     f"{mb(bands):>8} {os.getloadavg()[0]:>5.1f}  {r['bands']}×{r['rows']}")
        print(f"  done {n} rows", file=sys.stderr, flush=True)
    print(head, *lines, sep="\n")
    print("procs: most processes alive at once in the index step's tree; cpu s: their user+system CPU "
          "(wall minus cpu/procs is roughly time spent waiting on PostgreSQL); load1: 1-minute load "
          "average after the step (above the cpu count, other work on the machine slowed it)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="50000,200000,600000", help="comma-separated row counts")
    parser.add_argument("--rows", type=int, help="one size only (overrides --sizes)")
    parser.add_argument("--workers", default="default", help="passed to index(workers=...); default: one per core (as the CLI)")
    parser.add_argument("--dsn", help="scratch database (feed_items and schema pgdedup are dropped); "
                                      "default: start a throwaway local PostgreSQL")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--content-words", type=int, default=450)
    args = parser.parse_args()
    sizes = [args.rows] if args.rows else [int(s) for s in args.sizes.split(",") if s.strip()]
    if args.dsn:
        run(args.dsn, sizes, args.seed, args.content_words, args.workers)
        return
    with LocalPostgres() as pg:
        run(pg.dsn, sizes, args.seed, args.content_words, args.workers)


if __name__ == "__main__":
    main()
