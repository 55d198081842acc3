"""Planner statistics of pgdedup's tables that cover the collection a run works on (sql/0045).

PostgreSQL plans each statement on the statistics of the tables' last ANALYZE. One that ran
before a collection existed (or after every collection was dropped) makes the planner take the
collection for a single row and nest loops over all of it: a dedupe of 40,000 rows took 360 s
instead of 2.4 s. ``refresh`` has such tables ANALYZEd before a run and after writes by key;
``analyze`` ANALYZEs named tables after a run filled them. Both ANALYZE through
``pgdedup.analyze_as_owner`` (SECURITY DEFINER), so a role that does not own pgdedup's tables,
once granted EXECUTE on it (docs/security.md), gets the same statistics as the owner. What
the server says about tables it could not analyze (an INFO or a WARNING) reaches the caller
as a ``StatisticsWarning``.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import psycopg
from psycopg.errors import Diagnostic

from .errors import StatisticsWarning
from .progress import Progress


#: the severities pgdedup's SQL tells of tables it did not analyze (INFO since revision 51)
_SAID = ("INFO", "WARNING")
#: the modules whose frames a StatisticsWarning skips to reach the caller's line
_INSIDE = ("pgdedup", "contextlib")


def _outside_pgdedup() -> int:
    """The ``stacklevel`` for ``warnings.warn`` called here that names the first frame outside
    pgdedup (and the context managers between): the caller's own line, which warning filters by
    module then match."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and str(frame.f_globals.get("__name__") or "").partition(".")[0] in _INSIDE:
        level, frame = level + 1, frame.f_back
    return level


@contextmanager
def _warned(conn: psycopg.Connection) -> Iterator[None]:
    """Each INFO or WARNING of pgdedup's about its tables (``pgdedup.<table>...``) on ``conn``
    in the block, raised again as a ``StatisticsWarning`` when it ends (psycopg drops a server's
    notices unless a handler takes them)."""
    said: list[str] = []

    def take(diag: Diagnostic) -> None:
        if diag.severity_nonlocalized in _SAID and (diag.message_primary or "").startswith("pgdedup."):
            said.append(diag.message_primary + (f" ({diag.message_hint})" if diag.message_hint else ""))

    conn.add_notice_handler(take)
    try:
        yield
    finally:
        conn.remove_notice_handler(take)
    for message in said:
        warnings.warn(message, StatisticsWarning, stacklevel=_outside_pgdedup())


def refresh(conn: psycopg.Connection, collection_id: int, shown: Progress | None = None) -> list[str]:
    """ANALYZE the tables whose statistics do not cover the collection
    (``pgdedup.refresh_statistics``), in the caller's transaction; returns their names and
    reports them on ``shown``. A few milliseconds when they do cover it.

    "Do not cover": the planner expects fewer than 10 of the collection's rows in a table that
    holds at least 100 of them (a collection the statistics never saw). The ANALYZE holds its
    table's SHARE UPDATE EXCLUSIVE lock (which another session's ANALYZE or VACUUM of it waits
    for, at most 3 s when pgdedup's) to the commit: pgdedup's own runs commit it at once.

    Warns:
        StatisticsWarning: such tables that this role may not have analyzed (not granted
            ``pgdedup.analyze_as_owner``), or whose lock was not had in time.
    """
    started = time.perf_counter()
    with _warned(conn):
        analyzed: list[str] = conn.execute("SELECT pgdedup.refresh_statistics(%s)", (collection_id,)).fetchone()[0]
    if analyzed and shown is not None:
        shown.line(f"{', '.join(analyzed)} analyzed: their statistics did not cover the collection "
                   f"({time.perf_counter() - started:.1f} s)")
    return analyzed


def analyze(conn: psycopg.Connection, tables: Sequence[str]) -> list[str]:
    """ANALYZE these pgdedup tables (``pgdedup.analyze_tables``: as their owner, for a role that
    may) in the caller's transaction; returns the ones analyzed (a table whose lock is not had
    within 3 s, or the caller's lock_timeout if shorter, is skipped; a role without the grant
    gets none). The caller commits: the lock is held until then.

    Warns:
        StatisticsWarning: a table whose lock was not had in time.

    Raises:
        psycopg.Error: SQLSTATE PD003 (``InvalidArgument`` under ``errors.translated``) for a
            name that is not one of ``pgdedup.statistics_tables()``.
    """
    with _warned(conn):
        return conn.execute("SELECT pgdedup.analyze_tables(%s)", (list(tables),)).fetchone()[0]
