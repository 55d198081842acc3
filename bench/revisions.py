"""A full dedupe of one collection under two pgdedup schema revisions, in turns.

    python bench/revisions.py [--rows 200000] [--clusters 0] [--old 0014_ranks] [--repeat 3] [--dsn DSN]

How a change to pgdedup's SQL is measured: the same rows, the same signatures and band keys,
the same server, only the SQL functions differ. Generated ``feed_items`` (``sample.load``,
seed 42) in a throwaway LocalPostgres (or ``--dsn``: a scratch database whose ``feed_items``
table and ``pgdedup`` schema are DROPPED), plus ``--clusters`` clusters of 300 near-copies (a
long item with two random words appended: the shape of a templated feed, whose clusters fill
many buckets above the cap of 100), are indexed once at the newest revision (2 workers)
and VACUUM ANALYZEd; then, ``--repeat`` rounds, each: the schema moved to ``--old``, a full
dedupe by estimate through the SQL function (``pgdedup.update_duplicates(..., p_full => true,
p_verify => 'estimate')``, keep order published_at, feed_item_id, marks in ``duplicate_of``),
the schema moved back to the newest revision, the same dedupe again. Both decisions must be
identical (same marked rows, same kept row for each); the table prints median (min–max)
seconds, the server's time in each pgdedup function (track_functions, for the dedupe's own
transaction; needs a superuser, as the throwaway server's is) and the stage lines of the last
round (``pgdedup.progress``). On a shared machine the per-function times move less than the
totals: a function the change did not touch is the run's own control.

Verify auto is left out on purpose: its exact checks are Python's and do not depend on the
revision; the SQL around them is the same candidate and estimate code timed here.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scaling import spread  # noqa: E402  (same directory)
from speed import INDEX_CHILD, child, machine, scratch_database, table  # noqa: E402

import psycopg  # noqa: E402

SEED = 42
DEDUPE = ("SELECT kind, duplicates FROM pgdedup.update_duplicates('feed_items', true, NULL, "
          "'published_at, feed_item_id', 'duplicate_of', 100, true, 'estimate')")


#: Near-copies in a cluster of ``--clusters``.
CLUSTER = 300


def add_clusters(conn: psycopg.Connection, clusters: int) -> None:
    """``clusters`` clusters of ``CLUSTER`` rows: each an item of feed_items with more than 1,500
    characters of content, again with two random words appended (deterministic, seed 7)."""
    rng = random.Random(7)
    items = conn.execute("SELECT title, summary, content FROM feed_items WHERE length(content) > 1500 "
                         "ORDER BY feed_item_id LIMIT %s", (clusters,)).fetchall()
    start = datetime(2025, 1, 1, tzinfo=timezone.utc)
    with conn.cursor().copy("COPY feed_items (feed_item_id, feed_id, published_at, title, summary, content) "
                            "FROM STDIN") as copy:
        for c, (title, summary, content) in enumerate(items):
            for i in range(CLUSTER):
                tail = " ".join(f"{rng.choice(('alpha', 'beta', 'gamma', 'delta'))}{rng.randrange(10 ** 6)}"
                                for _ in range(2))
                copy.write_row((uuid.UUID(int=rng.getrandbits(128)), -1, start + timedelta(minutes=c * CLUSTER + i),
                                title, summary, f"{content} {tail}"))


def dedupe(conn, stages: list[str], functions: dict[str, list[float]]) -> tuple[float, list[tuple]]:
    """Seconds of one full SQL dedupe, and the marks it left (key, kept key), sorted.

    Appends each pgdedup function's own time (seconds, without the functions it called) to
    ``functions``: the server's track_functions counts for the dedupe's transaction, which a
    superuser can switch on (otherwise ``functions`` stays empty).
    """
    conn.execute("SET pgdedup.progress = on")
    try:
        conn.execute("SET track_functions = 'all'")
    except psycopg.errors.InsufficientPrivilege:
        pass
    def handler(diag) -> None:
        stages.append(diag.message_primary)
    conn.add_notice_handler(handler)
    t0 = time.perf_counter()
    with conn.transaction():
        kind, _ = conn.execute(DEDUPE).fetchone()
        for name, self_ms in conn.execute("SELECT funcname, self_time FROM pg_stat_xact_user_functions "
                                          "WHERE schemaname = 'pgdedup'"):
            functions.setdefault(name, []).append(self_ms / 1000)
    seconds = time.perf_counter() - t0
    conn.remove_notice_handler(handler)
    assert kind == "full", kind
    marks = conn.execute("SELECT feed_item_id, duplicate_of FROM feed_items WHERE duplicate_of IS NOT NULL "
                         "ORDER BY 1").fetchall()
    return seconds, marks


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--clusters", type=int, default=0, help="clusters of 300 near-copies added to the rows")
    p.add_argument("--old", default="0014_ranks", help="the revision to compare the newest with")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--dsn", help="scratch database (feed_items and schema pgdedup are dropped)")
    args = p.parse_args()
    import pgdedup
    from pgdedup import sample
    from pgdedup.schema import HEAD
    with scratch_database(args.dsn) as dsn:
        machine(dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("DROP TABLE IF EXISTS feed_items")
            conn.execute("DROP SCHEMA IF EXISTS pgdedup CASCADE")
            sample.load(conn, args.rows, "feed_items", seed=SEED)
            add_clusters(conn, args.clusters)
            child(["-c", INDEX_CHILD, dsn, "2", "feed_items", "feed_item_id", "title,summary,content"])
            for t in ("feed_items", "pgdedup.signatures", "pgdedup.band_keys"):
                conn.execute(f"VACUUM ANALYZE {t}")
            seconds: dict[str, list[float]] = {args.old: [], HEAD: []}
            stages: dict[str, list[str]] = {}
            functions: dict[str, dict[str, list[float]]] = {args.old: {}, HEAD: {}}
            decisions = set()
            for _ in range(args.repeat):
                for revision in (args.old, HEAD):
                    if revision == HEAD:
                        pgdedup.migrate(dsn, HEAD)
                    else:
                        pgdedup.downgrade(dsn, revision)
                    stages[revision] = []
                    s, marks = dedupe(conn, stages[revision], functions[revision])
                    seconds[revision].append(s)
                    decisions.add(hash(tuple(marks)))
            if len(decisions) != 1:
                raise SystemExit("the revisions marked different rows")
            print(f"\n{args.rows:,} rows + {args.clusters} clusters of {CLUSTER:,}, {len(marks):,} duplicates marked "
                  f"by both revisions alike; "
                  f"full dedupe by estimate, {args.repeat} rounds in turns")
            old = statistics.median(seconds[args.old])
            table(["revision", "seconds", f"× {args.old}"],
                  [[r, spread(s), f"{old / statistics.median(s):.2f}"]
                   for r, s in seconds.items()])
            if functions[HEAD]:
                names = sorted(set(functions[args.old]) | set(functions[HEAD]),
                               key=lambda f: -statistics.median(functions[HEAD].get(f, [0])))
                print("\nthe server's time by function (its own, without the pgdedup functions it calls), "
                      "seconds, median (min–max):")
                table(["function", args.old, HEAD],
                      [[f] + [spread(functions[r][f], "{:,.2f}") if f in functions[r] else "-" for r in (args.old, HEAD)]
                       for f in names if max(statistics.median(functions[r].get(f, [0])) for r in functions) >= 0.05])
            for revision, lines in stages.items():
                print(f"\nstages of the last round, {revision}:")
                for line in lines:
                    print("  " + line)


if __name__ == "__main__":
    main()
