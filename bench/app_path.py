"""The application's hot path: ``check`` and ``add`` on an open connection, per call.

    python bench/app_path.py [--rows 100000] [--calls 500] [--dsn DSN]

Builds a ``feed_items`` table of ``--rows`` generated items (``pgdedup.sample``), indexes it,
then times, per call and over ``--calls`` new items from the same generator (about a third are
copies or edits of recent items, so ``check`` finds something for them):

- ``check``: ``pgdedup.collection(...).check(text)`` on one open connection;
- ``add``: insert the item and ``coll.add(key)`` in the app's transaction, then commit (the
  insert and the commit are timed apart from ``add``);
- for comparison, ``pgdedup.similar(name, text=...)`` with a DSN: a new connection each call.

Reported: p50, p95 and max in milliseconds, next to the targets (check p95 ≤ 5 ms, add p95 ≤ 10
ms at 1M rows). Without ``--dsn`` a throwaway LocalPostgres is started and stopped. With
``--dsn``, use a scratch database: ``feed_items`` and the ``pgdedup`` schema are DROPPED.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from collections.abc import Callable

import psycopg

import pgdedup
from pgdedup import sample
from pgdedup.localpg import LocalPostgres

from index_bench import reset_and_load


def build(dsn: str, rows: int) -> None:
    """A fresh ``feed_items`` of ``rows`` generated items (seed 42), indexed."""
    reset_and_load(dsn, rows, seed=42, words=450)
    pgdedup.index("feed_items", "feed_item_id", ["title", "summary", "content"], dsn=dsn, workers=None,
                  progress=False)


def new_items(rows: int, count: int) -> list[tuple]:
    """The ``count`` items the generator makes after the first ``rows``: the feed, continued."""
    return list(itertools.islice(sample.generate(rows + count, seed=42), rows, None))


def ms(samples: list[float]) -> str:
    q = statistics.quantiles(samples, n=100, method="inclusive")
    return f"{q[49] * 1000:.2f} | {q[94] * 1000:.2f} | {max(samples) * 1000:.2f}"


def timed(call: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    call()
    return time.perf_counter() - t0


def run(dsn: str, rows: int, calls: int) -> None:
    t0 = time.perf_counter()
    build(dsn, rows)
    print(f"built and indexed {rows} rows in {time.perf_counter() - t0:.0f} s", flush=True)
    items = new_items(rows, calls)
    text_of = {c: i for i, c in enumerate(sample.COLUMNS)}
    texts = ["\n".join(x for x in (r[text_of["title"]], r[text_of["summary"]], r[text_of["content"]]) if x)
             for r in items]
    columns = ", ".join(sample.COLUMNS)
    marks = ", ".join(["%s"] * len(sample.COLUMNS))
    check_s, add_s, fresh_s, found = [], [], [], 0
    with psycopg.connect(dsn) as app:
        coll = pgdedup.collection("feed_items", app)
        for row, text in zip(items, texts):
            check_s.append(timed(lambda: coll.check(text)))
            found += bool(coll.check(text))
            app.execute(f"INSERT INTO feed_items ({columns}) VALUES ({marks})", row)
            add_s.append(timed(lambda: coll.add(row[0])))
            app.commit()
    for text in texts[: max(20, calls // 10)]:
        fresh_s.append(timed(lambda: pgdedup.similar("feed_items", text=text, dsn=dsn)))
    print(f"\n{calls} new items against a {rows}-row collection ({found} had near-duplicates at check time)")
    print("| call | p50 ms | p95 ms | max ms | target (1M rows) |")
    print("|---|---|---|---|---|")
    print(f"| `coll.check(text)`, open connection | {ms(check_s)} | p95 ≤ 5 |")
    print(f"| `coll.add(key)` in the app's transaction | {ms(add_s)} | p95 ≤ 10 |")
    print(f"| `pgdedup.similar(text=…)`, new connection each | {ms(fresh_s)} | |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--dsn")
    args = parser.parse_args()
    if args.dsn:
        run(args.dsn, args.rows, args.calls)
        return
    with LocalPostgres() as server:
        run(server.dsn, args.rows, args.calls)


if __name__ == "__main__":
    main()
