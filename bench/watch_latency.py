"""Commit-to-mark latency of ``pgdedup watch`` under a steady stream of inserts.

    python bench/watch_latency.py [--rows 100000] [--rate 100] [--seconds 60] [--dsn DSN]

Builds a ``feed_items`` table of ``--rows`` generated items (``pgdedup.sample``), indexes,
tracks and dedupes it, then starts ``pgdedup watch`` as a separate process and inserts
``--rate`` new items per second for ``--seconds`` seconds, each in its own transaction (new
items from the same generator, so about a third are copies or edits of recent ones). A poller
notes when each inserted key has left ``pgdedup.pending`` and the queue, that is, when its mark
(or "kept") is decided; latency is that moment minus the client's commit. Reported: p50, p95 and
max latency, the largest queue seen and the queue at the end (it must not grow), and the
watcher's batch lines. Finally the marks are compared with a full dedupe of the final table.

Without ``--dsn`` a throwaway LocalPostgres is started and stopped. With ``--dsn``, use a
scratch database: ``feed_items`` and the ``pgdedup`` schema are DROPPED.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import threading
import time

import psycopg

import pgdedup
from pgdedup import sample
from pgdedup.localpg import LocalPostgres

import app_path

KEEP = "published_at, feed_item_id"


def build(dsn: str, rows: int) -> None:
    """``app_path.build``, then tracked, caught up and deduped in full."""
    app_path.build(dsn, rows)
    pgdedup.track("feed_items", dsn=dsn)
    pgdedup.index("feed_items", dsn=dsn, progress=False)
    pgdedup.dedupe("feed_items", keep_order=KEEP, dsn=dsn)


def stream(dsn: str, rows: int, rate: float, seconds: float, committed: dict[str, float]) -> None:
    """Insert ``rate`` rows a second, one transaction each; note each key's commit time."""
    generated = iter(app_path.new_items(rows, int(rate * seconds)))  # the feed, continued
    columns = ", ".join(sample.COLUMNS)
    marks = ", ".join(["%s"] * len(sample.COLUMNS))
    with psycopg.connect(dsn, autocommit=True) as conn:
        start = time.monotonic()
        for i in range(int(rate * seconds)):
            pause = start + i / rate - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            row = next(generated)
            conn.execute(f"INSERT INTO feed_items ({columns}) VALUES ({marks})", row)
            committed[str(row[0])] = time.monotonic()


def poll(dsn: str, committed: dict[str, float], decided: dict[str, float], queue_sizes: list[int],
         done: threading.Event) -> None:
    """Every 50 ms: which committed keys are no longer pending, and how long the queue is."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        while not done.is_set() or len(decided) < len(committed):
            waiting = {r[0] for r in conn.execute(
                "SELECT row_key FROM pgdedup.pending WHERE collection = 'feed_items'")}
            queue_sizes.append(conn.execute("SELECT count(*) FROM pgdedup.queue").fetchone()[0])
            now = time.monotonic()
            for key in list(committed):
                if key not in decided and key not in waiting:
                    decided[key] = now
            if done.is_set() and time.monotonic() > done_at[0] + 60:
                break
            time.sleep(0.05)


done_at = [0.0]


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1] if len(values) > 1 else values[0]


def run(dsn: str, rows: int, rate: float, seconds: float) -> None:
    t0 = time.perf_counter()
    build(dsn, rows)
    print(f"built, indexed, tracked and deduped {rows} rows in {time.perf_counter() - t0:.0f} s", flush=True)
    watcher = subprocess.Popen([sys.executable, "-m", "pgdedup", "watch", "feed_items", "--keep-order", KEEP,
                                "--dsn", dsn], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    time.sleep(3)  # the watcher imports and connects
    committed: dict[str, float] = {}
    decided: dict[str, float] = {}
    queue_sizes: list[int] = []
    done = threading.Event()
    poller = threading.Thread(target=poll, args=(dsn, committed, decided, queue_sizes, done))
    poller.start()
    stream(dsn, rows, rate, seconds, committed)
    done_at[0] = time.monotonic()
    done.set()
    poller.join()
    os.killpg(watcher.pid, signal.SIGTERM)
    out, err = watcher.communicate(timeout=120)
    latencies = sorted(decided[k] - committed[k] for k in decided)
    batches = [line for line in out.splitlines() if "from commit to mark" in line]
    tail = queue_sizes[-20:] if queue_sizes else [0]
    print(f"\n{len(committed)} rows inserted at {rate:g}/s into a {rows}-row collection; "
          f"{len(decided)} decided, in {len(batches)} watcher batches")
    print("| latency commit → decided | p50 | p95 | max | target |")
    print("|---|---|---|---|---|")
    print(f"| seconds | {percentile(latencies, 50):.2f} | {percentile(latencies, 95):.2f} | {latencies[-1]:.2f} "
          f"| p50 ≤ 1, p95 ≤ 2 |")
    print(f"queue: largest {max(queue_sizes)}, over the last second {min(tail)}–{max(tail)} "
          f"(exit status of the watcher: {watcher.returncode})")
    for line in batches[-3:]:
        print("  " + line)
    with psycopg.connect(dsn, autocommit=True) as conn:
        before = dict(conn.execute("SELECT feed_item_id, duplicate_of FROM feed_items").fetchall())
    pgdedup.dedupe("feed_items", keep_order=KEEP, full=True, dsn=dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        after = dict(conn.execute("SELECT feed_item_id, duplicate_of FROM feed_items").fetchall())
    print(f"marks identical to a full run: {'yes' if before == after else 'NO'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--rate", type=float, default=100.0, help="inserted rows per second")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--dsn")
    args = parser.parse_args()
    if args.dsn:
        run(args.dsn, args.rows, args.rate, args.seconds)
        return
    with LocalPostgres() as server:
        run(server.dsn, args.rows, args.rate, args.seconds)


if __name__ == "__main__":
    main()
