"""Where a full ``pgdedup dedupe`` spends the server's time: every statement, nested ones included.

    python bench/dedupe_profile.py [--rows 200000] [--verify auto,estimate] [--min-ms 100]

Generated ``feed_items`` (``sample.load``, seed 42) in a throwaway LocalPostgres, indexed with 2
workers and VACUUM ANALYZEd. Then, per verify mode, a full dedupe (keep order ``published_at,
feed_item_id``, ``full=True``) in a fresh process, with every new session loading auto_explain
(``session_preload_libraries``) to log each statement of at least ``--min-ms`` with its
duration, the statements inside pgdedup's SQL functions included (``log_nested_statements``);
the exact checkers' sessions are logged too. Prints the run's seconds, then its statements
(first 70 characters, numbers and literals folded) by server time, largest first. A function's
time includes the statements it ran: the list nests (``update_duplicates`` holds all but the
checks; ``mark_duplicates`` the decision and the writes), and sessions running at once add up.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_profile import fold  # noqa: E402
from speed import child, machine, table  # noqa: E402

import psycopg  # noqa: E402
from psycopg import sql  # noqa: E402

#: The server log cut into its entries (each starts with the line prefix set below).
ENTRY = re.compile(r"^(?=\S+ \S+ \S+ \[\d+\] )", re.M)
#: An entry that is a logged plan: pid, milliseconds, and the first line of its statement.
PLAN = re.compile(r"\S+ \S+ \S+ \[(\d+)\] LOG:  duration: ([\d.]+) ms  plan:\n\s*Query Text: (.*)")
#: The innermost function a statement ran in, from the CONTEXT entry that follows its plan.
FUNCTION = re.compile(r"PL/pgSQL function ([\w.]+)\(")

#: A full dedupe in a fresh process (argv: dsn, verify); prints {"seconds", "duplicates"}.
DEDUPE_CHILD = """
import json, sys, time
import pgdedup
if __name__ == "__main__":
    started = time.perf_counter()
    r = pgdedup.dedupe("feed_items", keep_order="published_at, feed_item_id", verify=sys.argv[2], full=True,
                       dsn=sys.argv[1], progress=False)
    print(json.dumps({"seconds": time.perf_counter() - started, "duplicates": r.duplicates}))
"""

SETTINGS = {"session_preload_libraries": "auto_explain", "auto_explain.log_nested_statements": "on",
            "log_line_prefix": "%m [%p] "}


def _configure(conn: psycopg.Connection, min_ms: int | None) -> None:
    """auto_explain for every new session (``min_ms``), or back to the server's defaults (None)."""
    conn.execute("LOAD 'auto_explain'")  # (its settings exist once it is loaded)
    for name, value in {**SETTINGS, "auto_explain.log_min_duration": str(min_ms)}.items():
        if min_ms is None:
            conn.execute(sql.SQL("ALTER SYSTEM RESET {}").format(sql.SQL(name)))
        else:
            conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.SQL(name), sql.Literal(value)))
    conn.execute("SELECT pg_reload_conf()")
    time.sleep(0.5)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=200_000)
    p.add_argument("--verify", default="auto,estimate", help="comma-separated verify modes, run in this order")
    p.add_argument("--min-ms", type=int, default=100, help="log statements of at least this many ms")
    args = p.parse_args()
    import pgdedup
    from pgdedup import sample
    from pgdedup.localpg import LocalPostgres
    with LocalPostgres() as server, psycopg.connect(server.dsn, autocommit=True) as conn:
        dsn = server.dsn
        machine(dsn, ("pgdedup", "psycopg", "numpy"))
        started = time.perf_counter()
        sample.load(conn, args.rows, "feed_items", seed=42)
        conn.execute("VACUUM (ANALYZE) feed_items")
        pgdedup.index("feed_items", "feed_item_id", ["title", "summary", "content"], dsn=dsn, workers=2, progress=False)
        conn.execute("VACUUM (ANALYZE) pgdedup.signatures")
        conn.execute("VACUUM (ANALYZE) pgdedup.band_keys")
        print(f"{args.rows:,} feed_items loaded and indexed in {time.perf_counter() - started:.1f} s")
        log = server.base / "server.log"
        for verify in args.verify.split(","):
            _configure(conn, args.min_ms)
            start = log.stat().st_size
            try:
                run = child(["-c", DEDUPE_CHILD, dsn, verify])
            finally:
                _configure(conn, None)
            with log.open(encoding="utf-8", errors="replace") as f:
                f.seek(start)
                entries = ENTRY.split(f.read())
            seconds: dict[str, float] = collections.defaultdict(float)
            calls: collections.Counter[str] = collections.Counter()
            sessions: dict[str, set[str]] = collections.defaultdict(set)
            for entry, following in zip(entries, [*entries[1:], ""]):
                found = PLAN.match(entry)
                if found is None:
                    continue
                pid, ms, statement = found.groups()
                inside = FUNCTION.search(following) if f"[{pid}] CONTEXT:" in following else None
                key = f"{inside.group(1) if inside else '(top level)'}: {fold(statement)}"
                seconds[key] += float(ms) / 1000
                calls[key] += 1
                sessions[key].add(pid)
            print(f"\ndedupe --verify {verify} --full of {args.rows:,} rows: {run['seconds']:.1f} s, "
                  f"{run['duplicates']:,} duplicates; statements of >= {args.min_ms} ms (nested ones included):")
            top = sorted(seconds, key=seconds.__getitem__, reverse=True)
            table(["in function: statement", "server s", "calls", "sessions"],
                  [[k, f"{seconds[k]:.2f}", str(calls[k]), str(len(sessions[k]))] for k in top])

if __name__ == "__main__":
    main()
