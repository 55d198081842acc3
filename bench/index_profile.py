"""Where a first ``pgdedup index`` spends the server's time: each statement's duration from the log.

    python bench/index_profile.py [--docs 20000] [--workers 2] [--repeat 1]

The texts of ``speed.make_texts`` (~2.9 KB each) in a table ``speed_texts`` of a throwaway
LocalPostgres (its log is read, so no ``--dsn``); per round, a freshly migrated schema and one
``pgdedup.index`` in a fresh process (``speed.INDEX_CHILD``) with ``log_min_duration_statement = 0``.
Prints the run's seconds and the server's time per kind of statement (numbers and literals
folded), largest first: the COPYs, the streaming FETCHes (detoasting, md5 of each text), the move
of staged band keys (``flush_band_keys``). Statements of sessions running at once add up, so
the total can exceed the run's seconds.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speed import INDEX_CHILD, child, load_texts, machine, make_texts, table  # noqa: E402

import psycopg  # noqa: E402

LINE = re.compile(r"^\S+ \S+ \S+ \[\d+\] LOG:  duration: ([\d.]+) ms  (?:statement|execute [^:]*): (.*)$", re.M)


def fold(statement: str) -> str:
    """A statement's kind: its first 70 characters, literals and numbers replaced."""
    text = re.sub(r"'[^']*'", "'?'", re.sub(r"\s+", " ", statement)[:70])
    return re.sub(r"\d+", "N", text)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--docs", type=int, default=20_000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--repeat", type=int, default=1)
    args = p.parse_args()
    import pgdedup
    from pgdedup.localpg import LocalPostgres
    with LocalPostgres() as server, psycopg.connect(server.dsn, autocommit=True) as conn:
        dsn = server.dsn
        machine(dsn, ("pgdedup", "psycopg", "numpy"))
        load_texts(conn, make_texts(args.docs))
        log = server.base / "server.log"
        for _ in range(args.repeat):
            conn.execute("DROP SCHEMA IF EXISTS pgdedup CASCADE")
            pgdedup.migrate(dsn)
            conn.execute("CHECKPOINT")
            conn.execute("ALTER SYSTEM SET log_min_duration_statement = 0")
            conn.execute("ALTER SYSTEM SET log_line_prefix = '%m [%p] '")
            conn.execute("SELECT pg_reload_conf()")
            time.sleep(0.5)
            start = log.stat().st_size
            try:
                run = child(["-c", INDEX_CHILD, dsn, str(args.workers), "speed_texts", "id", "body"])
            finally:
                conn.execute("ALTER SYSTEM RESET log_min_duration_statement")
                conn.execute("SELECT pg_reload_conf()")
            with log.open(encoding="utf-8", errors="replace") as f:
                f.seek(start)
                found = LINE.findall(f.read())
            seconds: dict[str, float] = collections.defaultdict(float)
            calls: collections.Counter[str] = collections.Counter()
            for ms, statement in found:
                seconds[fold(statement)] += float(ms) / 1000
                calls[fold(statement)] += 1
            print(f"\n{args.docs:,} rows, {args.workers} workers: index {run['seconds']:.1f} s; "
                  f"server statements {sum(seconds.values()):.1f} s in all")
            top = sorted(seconds, key=seconds.__getitem__, reverse=True)[:8]
            table(["server s", "calls", "statement"], [[f"{seconds[k]:.2f}", str(calls[k]), k] for k in top])


if __name__ == "__main__":
    main()
