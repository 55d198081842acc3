"""``pgdedup watch``: keep a tracked collection's marks current as rows are written.

The watcher LISTENs on channel ``pgdedup`` (the tracking triggers NOTIFY it with the collection's
id) and, for each batch of queued changes, runs what a user would run by hand: ``index`` (from
the queue) and ``dedupe`` (incremental, identical to a full run). So a watcher killed at any
point leaves nothing half-done: the queue and the change log are only emptied in the
transactions that take their entries in, and the next run (watcher or by hand) finishes the work.

One watcher per collection: it holds a session advisory lock on its listening connection for
as long as it runs, and a second one fails at once naming the first. A lost connection (server
restart) is retried with a growing pause; after reconnecting it catches up from the queue.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

import psycopg

from .collections import get
from .connection import Db, own_dsn
from .db import connect, resolve_dsn
from .dedupe import dedupe
from .errors import CollectionBusy, InvalidArgument, StaleResults, translated
from .loader import index
from .schema import WATCH_LOCK


@dataclass
class Batch:
    """What one batch did; ``line()`` is the watcher's log line."""

    name: str
    queued: int
    signed: int
    removed: int
    rows_examined: int
    marks_changed: int
    lag: float  # seconds from the oldest change's transaction to its mark
    seconds: float

    def line(self) -> str:
        stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
        return (f"{stamp} {self.name}: {self.queued} changes ({self.signed} signed, {self.removed} removed), "
                f"{self.rows_examined} rows re-examined, {self.marks_changed} marks changed, "
                f"{self.lag:.2f} s from commit to mark, batch {self.seconds:.2f} s")


def watch(name: str, *, threshold: float | None = None, keep_order: str | None = None,
          column: str = "duplicate_of", alter: bool = True, max_bucket: int = 100, dsn: Db = None,
          stop: threading.Event | None = None, log: Callable[[str], object] = print, poll: float = 1.0) -> int:
    """Keep collection ``name`` deduped until ``stop`` is set; returns the number of batches run.

    The dedupe settings are those of ``dedupe`` and must stay the same for the incremental runs
    to apply. ``stop`` is checked between batches and at least every ``poll`` seconds, so a
    batch in progress always finishes (the CLI sets it on SIGINT/SIGTERM). The queue is also
    checked every ``poll`` seconds, so a notification lost with a connection is not a change lost.

    Raises:
        CollectionNotFound: no such collection.
        InvalidArgument: the collection is not tracked (``pgdedup track NAME`` first).
        CollectionBusy: another watcher watches it.
    """
    stop = stop or threading.Event()
    dsn = resolve_dsn(own_dsn(dsn, "watch"))
    batches, pause = 0, 1.0
    while not stop.is_set():
        try:
            with translated(), connect(dsn, autocommit=True, application_name=f"pgdedup watch {name}") as listener:
                coll = _claim(listener, name)
                listener.execute("LISTEN pgdedup")
                log(f"watching {name}: {coll.source.label}, marks in "
                    f"{coll.source.label + '.' + column if alter else 'pgdedup.' + name + '_duplicates'}")
                pause = 1.0
                while not stop.is_set():
                    if _waiting(listener, coll.id):
                        try:
                            batch = _run_batch(listener, coll.id, name, threshold, keep_order, column, alter,
                                               max_bucket, dsn)
                        except (CollectionBusy, StaleResults):
                            # an app's add (or a run by hand) holds the collection, or rows changed
                            # after this batch's index: the next round indexes them and tries again
                            stop.wait(poll)
                            continue
                        batches += 1
                        log(batch.line())
                        continue
                    for _ in listener.notifies(timeout=poll, stop_after=1):
                        pass
        except psycopg.OperationalError as exc:  # the server went away: retry, then catch up
            if stop.is_set():
                break
            log(f"connection lost ({str(exc).strip().splitlines()[0] if str(exc).strip() else 'no reason'}); "
                f"retrying in {pause:.0f} s")
            stop.wait(pause)
            pause = min(pause * 2, 30.0)
    log(f"stopped watching {name} after {batches} batches")
    return batches


def _claim(conn: psycopg.Connection, name: str):
    """The collection, once this session holds its watcher lock.

    Raises:
        InvalidArgument: not tracked.
        CollectionBusy: another session holds the watcher lock (named in the message).
    """
    coll = get(conn, name, need_source=True)
    if not coll.tracked:
        raise InvalidArgument(f"collection {name!r} is not tracked; run `pgdedup track {name}` first")
    if not conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (WATCH_LOCK, coll.id)).fetchone()[0]:
        holder = conn.execute(
            "SELECT a.pid, a.application_name, a.backend_start FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
            "WHERE l.locktype = 'advisory' AND l.classid = %s AND l.objid = %s AND l.granted LIMIT 1",
            (WATCH_LOCK, coll.id)).fetchone()
        who = f"{holder[1]} (pid {holder[0]}, since {holder[2]:%Y-%m-%d %H:%M:%S})" if holder else "another session"
        raise CollectionBusy(f"collection {name!r} is already watched by {who}")
    return coll


def _waiting(conn: psycopg.Connection, collection_id: int) -> bool:
    """Whether changes wait: queued keys, or logged changes a result has not taken in."""
    return conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pgdedup.queue WHERE collection_id = %s) "
        "OR EXISTS (SELECT 1 FROM pgdedup.pending p JOIN pgdedup.collections c ON c.name = p.collection "
        "           WHERE c.collection_id = %s)", (collection_id, collection_id)).fetchone()[0]


def _run_batch(conn: psycopg.Connection, collection_id: int, name: str, threshold: float | None,
               keep_order: str | None, column: str, alter: bool, max_bucket: int, dsn: str) -> Batch:
    """Index from the queue, then dedupe incrementally; measure the lag of the oldest change."""
    t0 = time.perf_counter()
    oldest = conn.execute("SELECT min(queued_at) FROM pgdedup.queue WHERE collection_id = %s",
                          (collection_id,)).fetchone()[0]
    indexed = index(name, dsn=dsn, progress=False)
    deduped = dedupe(name, threshold=threshold, keep_order=keep_order, column=column, alter=alter,
                     max_bucket=max_bucket, dsn=dsn)
    stats = conn.execute("SELECT stats FROM pgdedup.runs WHERE collection_id = %s AND kind = 'dedupe' "
                         "ORDER BY run_id DESC LIMIT 1", (collection_id,)).fetchone()[0]
    lag = (datetime.now(timezone.utc) - oldest).total_seconds() if oldest else 0.0
    return Batch(name, indexed.queued or 0, indexed.signed, indexed.removed, deduped.rows_examined,
                 int(stats.get("marks_changed", deduped.duplicates)), lag, time.perf_counter() - t0)
