"""``pgdedup dedupe``: decide which rows are near-duplicates of which kept row, in SQL.

The work happens in ``pgdedup.mark_duplicates`` / ``pgdedup.find_duplicates`` (sql/0002):
this module only calls them, so a psql user and a CLI user get exactly the same result.
"""

from __future__ import annotations

import time
from contextlib import suppress
from dataclasses import dataclass

import psycopg
from psycopg import sql

from . import statistics, tracking
from .collections import get
from .connection import Db, session
from .db import guard_source, table_columns
from .errors import InvalidArgument, StatisticsWarning, translated
from .exact import store_checks, verify_exact
from .progress import Progress


@dataclass
class DedupeResult:
    """What a dedupe run found; ``summary()`` is the line the CLI prints."""

    name: str
    rows_examined: int
    duplicates: int
    groups: int
    seconds: float
    marked_in: str  # "table.column" for in-place marking, else the view name
    kind: str = "full"  # or "incremental": only what changed since the last run was re-examined

    def summary(self) -> str:
        examined = "rows re-examined" if self.kind == "incremental" else "rows examined"
        return (f"deduped {self.name} ({self.kind}): {self.rows_examined} {examined}, {self.duplicates} duplicates "
                f"in {self.groups} groups, marked in {self.marked_in}, {self.seconds:.1f} s")


#: What a full run fills that the next incremental run joins against.
RESULT_TABLES = ("checked", "leaders", "duplicates")


def _analyze_results(conn: psycopg.Connection) -> None:
    """Give the tables a full run has just filled fresh statistics, in a transaction of their own
    on pgdedup's own connection, so that the next (incremental) run is not planned on none:
    measured at 1M rows, without statistics on them an incremental run took 6.8-7.0 s, with
    them 2.1 s (autovacuum analyzes them too, but later). A few tenths of a second after a full
    run, for the owner and any role granted it (``statistics.analyze``). Best effort: the marks
    are committed by then, so a failure here (a cancel) is left to autovacuum instead of failing
    the run, and a ``StatisticsWarning`` a caller's filter turned into an error (a table left
    out) keeps what the others got."""
    try:
        with suppress(StatisticsWarning):
            statistics.analyze(conn, RESULT_TABLES)
        conn.commit()
    except psycopg.Error:
        with suppress(psycopg.Error):
            conn.rollback()


def dedupe(name: str, *, threshold: float | None = None, keep_order: str | None = None,
           column: str = "duplicate_of", alter: bool = True, max_bucket: int = 100,
           verify: str = "auto", full: bool = False, dsn: Db = None, progress: bool | None = None) -> DedupeResult:
    """Mark near-duplicates of collection ``name``.

    ``alter=True`` adds/fills ``column`` in the source table (NULL = kept, else the kept row's key);
    ``alter=False`` leaves the source table alone and writes ``pgdedup.duplicates`` plus a view
    ``pgdedup."<name>_duplicates"`` of the source rows with their marks.
    ``keep_order`` is an ORDER BY list of source columns (e.g. ``"published_at, feed_item_id"``);
    the first row of a group in that order is kept. ``verify="auto"`` (the default) decides a
    candidate by its estimate where that is far enough from the threshold and re-reads the
    source text of the others to decide them by exact Jaccard; ``"exact"`` re-checks every
    candidate; ``"estimate"`` trusts every estimate (see ``exact``).

    A later run with the same settings (by estimate or auto; "exact" runs are full) is incremental: it re-examines only the
    rows that changed since (as logged by ``index``) and those connected to them through
    candidate edges, and stores exactly the marks a full run would (``pgdedup.update_duplicates``
    in sql/0006; docs/features.md says why), unless more changes were logged since than 1/25 of
    the rows indexed and than 1,000: then a full run, which gives the same marks, is the cheaper
    one (``pgdedup.many_changes``). ``full`` forces a full run.

    ``dsn`` is anything ``connection.session`` takes; on a caller's connection the whole run
    happens inside the caller's transaction (never committed here), and the marking column must
    exist already (declared by the app), since adding it there would hold the table's
    ACCESS EXCLUSIVE lock until the caller commits.

    ``progress`` (None: when stderr is a terminal) prints a line on stderr as each stage ends,
    the server's included (``progress``), and a counter of the pairs checked exactly while
    they are.

    Every argument is checked before anything is written. A column pgdedup has to add is added
    in its own short transaction (``pgdedup.prepare_mark_column``: a lock timeout, never a long
    ACCESS EXCLUSIVE lock); the marks are then decided and written in one transaction (all or
    none) that holds the collection's lock and only row locks on the source table. After a full
    run on its own connection, pgdedup ANALYZEs the tables that run filled (``_analyze_results``).
    Before the run, pgdedup's tables whose statistics do not cover the collection are ANALYZEd
    (``statistics.refresh``; on a caller's connection, in its transaction).

    Raises:
        CollectionNotFound: no such collection.
        SourceMissing: the source table was renamed or dropped.
        InvalidArgument: a threshold outside (0, 1], max_bucket < 1, an unknown verify mode or
            an unreadable keep order.
        UnsafeOperation: ``column`` is not one pgdedup may write (the key, a text column, a
            column with values pgdedup did not write, another column than the recorded one).
        CollectionBusy: another run holds the collection, or the table could not be locked in time.
    """
    t0 = time.perf_counter()
    shown = Progress(f"dedupe {name}", progress)
    with translated(), session(dsn, f"pgdedup dedupe {name}") as s:
        conn = s.conn
        coll = get(conn, name, need_source=True)
        if coll.tracked and not tracking.untrack_if_lost(conn, coll).tracked:
            s.commit()  # (the triggers removed: their table's lock released at once on pgdedup's connection)
        conn.execute("SELECT pgdedup.check_args(%s, %s, %s)", (threshold, max_bucket, verify))
        conn.execute("SELECT pgdedup.keep_order_sql(%s, %s)", (coll.id, keep_order))
        if alter:
            exists = column in table_columns(conn, coll.source.schema, coll.source.table)
            if not s.owned and not exists:
                raise InvalidArgument(
                    f"the marking column {coll.source.label}.{column} does not exist; declare it in your model or "
                    "migration (the key's type, nullable), or call dedupe with a DSN or Engine so pgdedup adds it "
                    "in a short transaction of its own")
            # (it guards the source itself: under the lock for an existing column, without it for
            # one it adds, then again under ALTER's lock; sql/0024_source_check.sql)
            where = conn.execute("SELECT pgdedup.prepare_mark_column(%s, %s)", (name, column)).fetchone()[0]
            s.commit()  # the column (if added) and its brief table lock: done
        statistics.refresh(conn, coll.id, shown)
        s.commit()  # (its lock on the tables it analyzed, if any: released on pgdedup's own connection)
        conn.execute("SELECT pgdedup.lock_collection(%s)", (coll.id,))
        guard_source(conn, coll.source, name)  # to the commit: the checks (worker processes too) and the marks
        if verify != "exact":
            with shown.server(conn):
                # auto: check the ambiguous pairs the decision stopped at, then let it go on (a full
                # run reuses its candidates; an incremental one resumes at its closure step)
                while True:
                    row = conn.execute("SELECT * FROM pgdedup.update_duplicates(%s, %s, %s, %s, %s, %s, %s, %s)",
                                       (name, alter, threshold, keep_order, column, max_bucket, full,
                                        verify)).fetchone()
                    if row[0] != "unchecked":
                        break
                    with shown.stage(f"{row[1]} ambiguous pairs checked exactly"):
                        store_checks(conn, coll, sql.SQL("SELECT * FROM pg_temp.pgdedup_unchecked"), s.dsn,
                                     progress=shown.on)
            if not alter:
                where = conn.execute("SELECT pgdedup.create_duplicates_view(%s)", (name,)).fetchone()[0]
            s.commit()
            if row[0] == "full" and s.owned:
                _analyze_results(conn)
            return DedupeResult(name, row[1], row[2], row[3], time.perf_counter() - t0, where, row[0])
        with shown.stage("every candidate checked exactly"):
            verify_exact(conn, coll, threshold, max_bucket, ranked=True, keep_order=keep_order, progress=shown.on)
        if alter:
            row = conn.execute("SELECT * FROM pgdedup.mark_duplicates(%s, %s, %s, %s, %s, %s)",
                               (name, threshold, keep_order, column, max_bucket, verify)).fetchone()
        else:
            row = conn.execute("SELECT * FROM pgdedup.find_duplicates(%s, %s, %s, %s, %s)",
                               (name, threshold, keep_order, max_bucket, verify)).fetchone()
            where = conn.execute("SELECT pgdedup.create_duplicates_view(%s)", (name,)).fetchone()[0]
        s.commit()
    return DedupeResult(name, row[0], row[1], row[2], time.perf_counter() - t0, where)
