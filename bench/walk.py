"""The keep-order walk alone, on graphs of chosen shapes, in three settings.

    python bench/walk.py [--texts 100000] [--chain 30000] [--repeat 3] [--dsn DSN]

``pgdedup.walk(p_sequential_below, p_batch)`` decides each text's first row in set-based rounds;
after a round that decided fewer than ``p_sequential_below`` of them, it decides the next
``p_batch`` undecided ones one by one in keep order, then goes on with rounds. The number of
rounds is the longest alternating chain of the graph, so the shape of the graph decides which
way is cheaper. Each shape is fed to the walk as the temporary tables a dedupe makes
(pg_temp.pgdedup_rows, pg_temp.pgdedup_edges), in one transaction rolled back after the walk, in
three settings, in turns (each turn starting with the next setting), ``--repeat`` rounds: rounds only (0: revision 16's walk), the defaults
(16, 1000), and one by one for every head left after the first round that decides fewer than 16
(10**9 as the batch). All must give the same marks (the script refuses otherwise); the table
prints the walk's seconds, median (min–max), and in brackets the rounds it ran + the heads it
decided one by one.

Shapes (one row per text, keep order = text number unless said otherwise; seeded):
  chain      texts 1-2-3-..., each similar to the next only (versions of one page);
  window-3   each text similar to the 3 texts after it (a drifting series);
  nearby     each text similar to 2 random texts within 50 places after it;
  clusters   groups of 2-6 texts (cliques), in random keep order (the feed_items shape);
  mixed      clusters plus 1 % of the texts in chains of 200;
  gated      clusters whose earliest texts are all similar to the last of a 300-text chain that
             comes first in keep order (rounds stall on the chain, then decide the clusters).
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scaling import spread  # noqa: E402  (same directory)
from speed import machine, scratch_database, table  # noqa: E402

import psycopg  # noqa: E402

SEED = 42
SETTINGS = (("rounds only", (0, 1)), ("defaults (16, 1000)", (16, 1000)), ("rest one by one", (16, 10**9)))


def chain(n: int, rng: random.Random) -> tuple[list[int], list[tuple[int, int, float]]]:
    return list(range(n)), [(i, i + 1, 0.9) for i in range(n - 1)]


def window(n: int, rng: random.Random, width: int = 3) -> tuple[list[int], list[tuple[int, int, float]]]:
    return list(range(n)), [(i, j, 0.85) for i in range(n) for j in range(i + 1, min(n, i + 1 + width))]


def nearby(n: int, rng: random.Random) -> tuple[list[int], list[tuple[int, int, float]]]:
    edges = {(i, j) for i in range(n - 1) for j in rng.sample(range(i + 1, min(n, i + 51)), min(2, n - 1 - i))}
    return list(range(n)), [(i, j, rng.choice((0.8, 0.9))) for i, j in sorted(edges)]


def clusters(n: int, rng: random.Random) -> tuple[list[int], list[tuple[int, int, float]]]:
    ranks = list(range(n))
    rng.shuffle(ranks)
    edges, i = [], 0
    while i < n:
        size = min(rng.randint(2, 6), n - i)
        edges += [(a, b, rng.choice((0.8, 0.9, 1.0))) for a in range(i, i + size) for b in range(a + 1, i + size)]
        i += size
    return ranks, edges


def mixed(n: int, rng: random.Random) -> tuple[list[int], list[tuple[int, int, float]]]:
    ranks, edges = clusters(n, rng)
    chained = rng.sample(range(n), n // 100)
    edges += [(a, b, 0.85) for k in range(0, len(chained) - 1) if (k + 1) % 200 for a, b in [(chained[k], chained[k + 1])]]
    return ranks, edges


def gated(n: int, rng: random.Random) -> tuple[list[int], list[tuple[int, int, float]]]:
    ranks, edges = clusters(n - 300, rng)
    ranks = [r + 300 for r in ranks] + list(range(300))  # the chain: texts n-300 .. n-1, ranks 0..299
    edges += [(n - 300 + i, n - 299 + i, 0.9) for i in range(299)]
    first = {}
    for a, b, _ in edges[:-299]:
        for t in (a, b):
            group = min(a, b)
            if group not in first or ranks[t] < ranks[first[group]]:
                first[group] = t
    edges += [(t, n - 1, 0.85) for t in sorted(set(first.values()))]
    return ranks, edges


def walk(conn: psycopg.Connection, ranks: list[int], edges: list[tuple[int, int, float]],
         setting: tuple[int, int]) -> tuple[float, str, list[tuple]]:
    """Seconds of one ``pgdedup.walk(*setting)``, its stage line, and the marks it made (sorted)."""
    stages: list[str] = []
    def handler(diag) -> None:
        stages.append(diag.message_primary)
    conn.add_notice_handler(handler)
    with conn.transaction(force_rollback=True):
        conn.execute("SET LOCAL pgdedup.progress = on")
        conn.execute("CREATE TEMP TABLE pgdedup_rows (row_id bigint, row_key text, text_hash bigint, rnk bigint) "
                     "ON COMMIT DROP")
        conn.execute("CREATE TEMP TABLE pgdedup_edges (h1 bigint, h2 bigint, similarity double precision) "
                     "ON COMMIT DROP")
        with conn.cursor().copy("COPY pg_temp.pgdedup_rows FROM STDIN") as copy:
            for text, rank in enumerate(ranks):
                copy.write_row((text, f"r{text}", text, rank))
        with conn.cursor().copy("COPY pg_temp.pgdedup_edges FROM STDIN") as copy:
            for a, b, s in edges:
                copy.write_row((a, b, s))
                copy.write_row((b, a, s))
        conn.execute("ANALYZE pg_temp.pgdedup_rows")
        t0 = time.perf_counter()
        conn.execute("SELECT pgdedup.walk(%s, %s)", setting)
        seconds = time.perf_counter() - t0
        marks = conn.execute("SELECT row_key, duplicate_of, similarity FROM pg_temp.pgdedup_marks ORDER BY 1").fetchall()
    conn.remove_notice_handler(handler)
    line = next((s for s in stages if s.startswith("pgdedup: keep-order walk")), "")
    return seconds, line, marks


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--texts", type=int, default=100_000, help="texts of every shape but the chain")
    p.add_argument("--chain", type=int, default=30_000, help="texts of the chain")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--dsn", help="a database where pgdedup's schema is (or may be) at the newest revision")
    args = p.parse_args()
    import pgdedup
    shapes = (("chain", chain, args.chain), ("window-3", window, args.texts), ("nearby", nearby, args.texts),
              ("clusters", clusters, args.texts), ("mixed", mixed, args.texts), ("gated", gated, args.texts))
    with scratch_database(args.dsn) as dsn:
        machine(dsn, ("pgdedup", "psycopg"))
        pgdedup.migrate(dsn)
        rows = []
        with psycopg.connect(dsn, autocommit=True) as conn:
            for name, make, n in shapes:
                ranks, edges = make(n, random.Random(SEED))
                seconds: dict[str, list[float]] = {label: [] for label, _ in SETTINGS}
                lines: dict[str, str] = {}
                reference = None
                for turn in range(args.repeat):
                    # each turn starts with the next setting: a walk's place in the turn costs
                    # it up to 10 % (measured with three equal settings), so it must rotate
                    for label, setting in SETTINGS[turn % 3:] + SETTINGS[:turn % 3]:
                        s, lines[label], marks = walk(conn, ranks, edges, setting)
                        seconds[label].append(s)
                        if reference is None:
                            reference = marks
                        elif marks != reference:
                            sys.exit(f"{name}: {label} marked differently")
                cells = [f"{name} ({n:,} texts, {len(edges):,} edges)"]
                for label, _ in SETTINGS:
                    rounds, one_by_one = re.search(r"in (\d+) rounds and (\d+) one by one", lines[label]).groups()
                    cells.append(f"{spread(seconds[label], '{:.2f}')} [{rounds} r + {int(one_by_one):,}]")
                medians = [statistics.median(seconds[label]) for label, _ in SETTINGS]
                cells.append(f"{medians[0] / medians[1]:.2f}")
                rows.append(cells)
                print(" | ".join(cells), flush=True)
        print()
        table(["shape", *(label for label, _ in SETTINGS), "rounds only ÷ defaults"], rows)


if __name__ == "__main__":
    main()
