"""Planner statistics of pgdedup's tables that cover the collection a run works on (sql/0045).

PostgreSQL plans each statement on the statistics of the tables' last ANALYZE. One that ran
before a collection existed (or after every collection was dropped) makes the planner take the
collection for a single row and nest loops over all of it: a dedupe of 40,000 rows took 360 s
instead of 2.4 s. ``refresh`` has such tables ANALYZEd before a run and after writes by key;
``analyze`` ANALYZEs named tables after a run filled them. Both ANALYZE through
``pgdedup.analyze_as_owner`` (SECURITY DEFINER), so a role that does not own pgdedup's tables,
once granted EXECUTE on it (docs/security.md), gets the same statistics as the owner.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import psycopg

from .progress import Progress


def refresh(conn: psycopg.Connection, collection_id: int, shown: Progress | None = None) -> list[str]:
    """ANALYZE the tables whose statistics do not cover the collection
    (``pgdedup.refresh_statistics``), in the caller's transaction; returns their names and
    reports them on ``shown``. A few milliseconds when they do cover it.

    "Do not cover": the planner expects fewer than 10 of the collection's rows in a table that
    holds at least 100 of them (a collection the statistics never saw). The ANALYZE holds its
    table's SHARE UPDATE EXCLUSIVE lock (which another session's ANALYZE or VACUUM of it waits
    for, at most 3 s when pgdedup's) to the commit: pgdedup's own runs commit it at once.
    """
    started = time.perf_counter()
    analyzed: list[str] = conn.execute("SELECT pgdedup.refresh_statistics(%s)", (collection_id,)).fetchone()[0]
    if analyzed and shown is not None:
        shown.line(f"{', '.join(analyzed)} analyzed: their statistics did not cover the collection "
                   f"({time.perf_counter() - started:.1f} s)")
    return analyzed


def analyze(conn: psycopg.Connection, tables: Sequence[str]) -> list[str]:
    """ANALYZE these pgdedup tables (``pgdedup.analyze_tables``: as their owner, for a role that
    may) in the caller's transaction; returns the ones analyzed (a table whose lock is not had
    within 3 s is skipped with a WARNING; a role without the grant gets none). The caller
    commits: the lock is held until then.

    Raises:
        psycopg.Error: SQLSTATE PD003 (``InvalidArgument`` under ``errors.translated``) for a
            name that is not one of ``pgdedup.statistics_tables()``.
    """
    return conn.execute("SELECT pgdedup.analyze_tables(%s)", (list(tables),)).fetchone()[0]
