"""``pgdedup watch``: keep a tracked collection's marks current as rows are written.

The watcher LISTENs on channel ``pgdedup`` (the tracking triggers NOTIFY it with the collection's
id) and, for each batch of queued changes, runs what a user would run by hand: ``index`` (from
the queue) and ``dedupe`` (incremental, identical to a full run). So a watcher killed at any
point leaves nothing half-done: the queue and the change log are only emptied in the
transactions that take their entries in, and the next run (watcher or by hand) finishes the work.

One watcher per collection: it holds a session advisory lock on its listening connection for
as long as it runs, and a second one fails at once naming the first. A lost connection (server
restart) is retried with a growing pause; after reconnecting it catches up from the queue. At
every poll it checks that its collection is still the one it claimed, still tracked, with its
triggers on the source: it stops with an error otherwise (untracked, dropped, the source
replaced), since no write would reach it any more.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime, timezone

import psycopg

from .collections import Collection, get
from .connection import Db, own_dsn
from .db import connect, resolve_dsn
from .dedupe import dedupe
from .errors import CollectionBusy, ConnectionFailed, InvalidArgument, StaleResults, translated
from .loader import index
from .schema import WATCH_LOCK


@dataclass
class Batch:
    """What one batch did; ``line()`` is the watcher's log line. ``marks_changed`` is None for
    a batch whose dedupe decided in full (it counts its duplicates, not what changed)."""

    name: str
    queued: int
    signed: int
    removed: int
    rows_examined: int
    marks_changed: int | None
    duplicates: int
    lag: float  # seconds from the oldest change's transaction to its mark
    seconds: float

    def line(self) -> str:
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        decided = (f"{self.rows_examined} rows re-examined, {self.marks_changed} marks changed"
                   if self.marks_changed is not None else
                   f"decided in full: {self.rows_examined} rows, {self.duplicates} duplicates")
        return (f"{stamp} {self.name}: {self.queued} changes ({self.signed} signed, {self.removed} removed), "
                f"{decided}, {self.lag:.2f} s from commit to mark, batch {self.seconds:.2f} s")


def watch(name: str, *, threshold: float | None = None, keep_order: str | None = None,
          column: str = "duplicate_of", alter: bool = True, max_bucket: int = 100, dsn: Db = None,
          stop: threading.Event | None = None, log: Callable[[str], object] = print, poll: float = 1.0) -> int:
    """Keep collection ``name`` deduped until ``stop`` is set; returns the number of batches run.

    The dedupe settings are those of ``dedupe`` and must stay the same for the incremental runs
    to apply; they are checked before the watcher starts. ``stop`` is checked between batches
    and at least every ``poll`` seconds, so a batch in progress always finishes (the CLI sets it
    on SIGINT/SIGTERM, and cancels the batch on a second one). The queue is also checked every
    ``poll`` seconds, so a notification lost with a connection is not a change lost. A batch
    refused twice in a row because rows changed after they were signed (a write the triggers
    did not see) is followed by an index that compares every row. A lost connection is retried
    with a growing pause, once the watcher has connected (a first connection that fails raises).

    Raises:
        CollectionNotFound: no such collection.
        InvalidArgument: the collection is not tracked (``pgdedup track NAME`` first), or stops
            being tracked, is dropped or made again, or its source is replaced while it runs;
            or a dedupe setting is invalid.
        CollectionBusy: another watcher watches it.
        ConnectionFailed: the server cannot be reached at the start.
    """
    stop = stop or threading.Event()
    dsn = resolve_dsn(own_dsn(dsn, "watch"))
    target = "column" if alter else "view"
    batches, pause, stale, connected = 0, 1.0, "", False
    while not stop.is_set():
        try:
            with translated(), connect(dsn, autocommit=True, application_name=f"pgdedup watch {name}") as listener:
                connected = True
                coll = _claim(listener, name, threshold, keep_order, max_bucket)
                listener.execute("LISTEN pgdedup")
                log(f"watching {name}: {coll.source.label}, marks in "
                    f"{coll.source.label + '.' + column if alter else 'pgdedup.' + name + '_duplicates'}")
                pause = 1.0
                while not stop.is_set():
                    _check_still_tracked(listener, coll)
                    if _waiting(listener, coll.id, target):
                        try:
                            batch = _run_batch(listener, coll.id, name, threshold, keep_order, column, alter,
                                               max_bucket, dsn)
                        except CollectionBusy:  # an app's add (or a run by hand) holds the collection
                            stop.wait(poll)
                            continue
                        except StaleResults as exc:  # rows changed after this batch's index
                            if str(exc) != stale:  # the first time: the next batch indexes what was queued
                                log(f"{name}: {exc}")
                                stale = str(exc)
                            else:  # again: a write no trigger saw (writers may keep the queue busy)
                                log(f"{name}: again: comparing every row")
                                with suppress(CollectionBusy):  # (held by another run: next round)
                                    index(name, full=True, dsn=dsn, progress=False)
                            stop.wait(poll)
                            continue
                        batches, stale = batches + 1, ""
                        log(batch.line())
                        continue
                    for _ in listener.notifies(timeout=poll, stop_after=1):
                        pass
        except (psycopg.OperationalError, ConnectionFailed) as exc:  # the server went away: retry, then catch up
            if not connected:  # never reached: a DSN that may never work (no such database, password)
                raise
            if stop.is_set():
                break
            log(f"connection lost ({str(exc).strip().splitlines()[0] if str(exc).strip() else 'no reason'}); "
                f"retrying in {pause:.0f} s")
            stop.wait(pause)
            pause = min(pause * 2, 30.0)
    log(f"stopped watching {name} after {batches} batches")
    return batches


def _claim(conn: psycopg.Connection, name: str, threshold: float | None, keep_order: str | None,
           max_bucket: int) -> Collection:
    """The collection, once this session holds its watcher lock and the dedupe settings are
    checked (so a typo fails now, not at the first write).

    Raises:
        InvalidArgument: not tracked, or a bad threshold, max_bucket or keep order.
        CollectionBusy: another session holds the watcher lock (named in the message).
    """
    coll = get(conn, name, need_source=True)
    if not coll.tracked:
        raise InvalidArgument(f"collection {name!r} is not tracked; run `pgdedup track {name}` first")
    conn.execute("SELECT pgdedup.check_args(%s, %s)", (threshold, max_bucket))
    conn.execute("SELECT pgdedup.keep_order_sql(%s, %s)", (coll.id, keep_order))
    if not conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (WATCH_LOCK, coll.id)).fetchone()[0]:
        holder = conn.execute(
            "SELECT a.pid, a.application_name, a.backend_start FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
            "WHERE l.locktype = 'advisory' AND l.classid = %s AND l.objid = %s AND l.granted LIMIT 1",
            (WATCH_LOCK, coll.id)).fetchone()
        who = f"{holder[1]} (pid {holder[0]}, since {holder[2]:%Y-%m-%d %H:%M:%S})" if holder else "another session"
        raise CollectionBusy(f"collection {name!r} is already watched by {who}")
    return coll


def _check_still_tracked(conn: psycopg.Connection, coll: Collection) -> None:
    """Raise when no write can reach this watcher any more: its collection was dropped (or made
    again under its name), stopped being tracked, or its source lost its triggers (replaced,
    renamed, triggers disabled).

    Raises:
        InvalidArgument: with what happened and what to run.
    """
    now, intact = conn.execute("SELECT (SELECT collection_id FROM pgdedup.collections WHERE name = %s), "
                               "pgdedup.tracking_intact(%s)", (coll.name, coll.id)).fetchone()
    if now != coll.id:
        raise InvalidArgument(f"collection {coll.name!r} was dropped while watched"
                              + (" and made again: start the watcher again" if now is not None else ""))
    if not intact:
        raise InvalidArgument(
            f"collection {coll.name!r} is not tracked any more, or its source {coll.source.label} lost its tracking "
            f"triggers (replaced, renamed or triggers disabled): run `pgdedup track {coll.name}`, then watch again")


def _waiting(conn: psycopg.Connection, collection_id: int, target: str) -> bool:
    """Whether changes wait: queued keys, or logged changes the watched result (``target``) has
    not taken in. (Another target's result, which this watcher never updates, does not count:
    pgdedup.pending lists what any result lacks, and made the watcher run empty batches.)"""
    return conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pgdedup.queue WHERE collection_id = %(c)s) "
        "OR EXISTS (SELECT 1 FROM pgdedup.changes ch WHERE ch.collection_id = %(c)s AND ch.seq > coalesce("
        "  (SELECT r.change_seq FROM pgdedup.results r WHERE r.collection_id = %(c)s AND r.target = %(t)s), 0))",
        {"c": collection_id, "t": target}).fetchone()[0]


def _run_batch(conn: psycopg.Connection, collection_id: int, name: str, threshold: float | None,
               keep_order: str | None, column: str, alter: bool, max_bucket: int, dsn: str) -> Batch:
    """Index from the queue, then dedupe incrementally; measure the lag of the oldest change."""
    t0 = time.perf_counter()
    oldest = conn.execute("SELECT min(queued_at) FROM pgdedup.queue WHERE collection_id = %s",
                          (collection_id,)).fetchone()[0]
    indexed = index(name, dsn=dsn, progress=False)
    deduped = dedupe(name, threshold=threshold, keep_order=keep_order, column=column, alter=alter,
                     max_bucket=max_bucket, dsn=dsn)
    changed = None
    if deduped.kind == "incremental":
        stats = conn.execute("SELECT stats FROM pgdedup.runs WHERE collection_id = %s AND kind = 'dedupe' "
                             "ORDER BY run_id DESC LIMIT 1", (collection_id,)).fetchone()[0]
        changed = stats.get("marks_changed")
    lag = (datetime.now(timezone.utc) - oldest).total_seconds() if oldest else 0.0
    return Batch(name, indexed.queued or 0, indexed.signed, indexed.removed, deduped.rows_examined, changed,
                 deduped.duplicates, lag, time.perf_counter() - t0)
