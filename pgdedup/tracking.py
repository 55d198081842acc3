"""Change tracking: triggers on the source table queue the keys writers touch, in the writers' own
transactions (sql/0006: ``pgdedup.track``, ``pgdedup.capture``), and ``index`` signs just those.

A queued key leaves the queue in the transaction that stores its row's new signature (or
forgets a deleted row), so a crash anywhere loses nothing: the rerun finds the key still
queued. Only entries that were visible when they were read are deleted, never a range of
sequence numbers, so a writer that commits late is never skipped.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import replace

import psycopg
from psycopg import sql

from . import statistics
from .collections import Collection, get
from .connection import Db, session
from .db import Source, beside_the_run
from .errors import CollectionBusy, TrackingLost, translated


def track(name: str, *, on: bool = True, dsn: Db = None) -> bool:
    """Start (``on``) or stop tracking the source table of collection ``name``.

    Starting installs four statement-level triggers (insert, update, delete, truncate) that
    queue keys and send ``NOTIFY pgdedup, '<collection id>'``; to catch up with what happened
    before, the next ``index`` compares every row once and the next ``dedupe`` of each target
    decides in full (a keep-order change made while untracked is seen by no index). Stopping removes them and empties the queue,
    after logging the queued keys as changed (the next incremental dedupe re-examines them). Each
    takes the table's lock for the instant of creating or dropping the triggers (waiting at
    most ``lock_timeout``, 5 s unless the session sets one). Returns whether it is tracked now.

    Raises:
        CollectionNotFound: no such collection.
        SourceMissing: starting, and the source table is gone.
        PermissionDenied: the role may not create triggers on the table (it needs to own it).
        CollectionBusy: another run holds the collection, or the table lock was not had in time.
    """
    with translated(), session(dsn, f"pgdedup track {name}") as s:
        coll = get(s.conn, name, need_source=on)
        tracked = set_triggers(s.conn, coll, on)
        s.commit()
    return tracked


def set_triggers(conn: psycopg.Connection, coll: Collection, on: bool) -> bool:
    """``pgdedup.track(name, on)`` in ``conn``'s transaction: whether it is tracked now.

    Creating or dropping the triggers needs the table's lock for an instant, waited for at most
    ``lock_timeout`` (5 s unless the session sets one); behind a transaction that holds the
    table, PostgreSQL's "canceling statement due to lock timeout" says neither which table nor
    who holds it, so the error does.

    Raises:
        CollectionBusy: the table's lock was not had in time (the message names the holder), or
            another run holds the collection.
    """
    try:
        with conn.transaction():  # (a savepoint in a transaction: the caller's stays usable)
            return conn.execute("SELECT pgdedup.track(%s, %s)", (coll.name, on)).fetchone()[0]
    except psycopg.errors.LockNotAvailable as exc:
        holder = conn.execute(
            "SELECT a.pid, a.application_name, a.state FROM pg_catalog.pg_locks l "
            "JOIN pg_catalog.pg_stat_activity a USING (pid) WHERE l.granted AND a.pid <> pg_catalog.pg_backend_pid() "
            "AND l.relation = pgdedup.relation_of(%s, %s) LIMIT 1", (coll.source.schema, coll.source.table)).fetchone()
        who = f"pid {holder[0]} ({holder[1] or 'no application_name'}, {holder[2]})" if holder else "another transaction"
        raise CollectionBusy(f"could not lock {coll.source.label} to {'add' if on else 'remove'} the tracking triggers "
                             f"of collection {coll.name!r} in time (lock_timeout): {who} holds it; try again when it ends") from exc


def untrack_if_lost(conn: psycopg.Connection, coll: Collection) -> Collection:
    """``coll`` as it is after tracking it was stopped, if its tracking was lost.

    The triggers stay on the relation that had the source's name at ``track``: a source
    replaced under its name (DROP and CREATE, an ETL load's rename swap) has none, and writes to
    a table whose triggers are disabled are not queued either, so the queue no longer holds
    every change. Trusting it left wrong marks without an error; instead, tracking is stopped
    (``pgdedup.track(name, false)``: the queued keys logged as changes, the triggers removed
    wherever they are), so that this run compares every row and decides every mark as for any
    untracked collection, and a ``TrackingLost`` warning says so. Runs in ``conn``'s transaction.
    A source that is not there by name is left to the caller's ``SourceMissing``.

    Raises:
        CollectionBusy: another run holds the collection.
    """
    if not coll.tracked or conn.execute(
            "SELECT pgdedup.tracking_intact(%s) OR pgdedup.relation_of(%s, %s) IS NULL",
            (coll.id, coll.source.schema, coll.source.table)).fetchone()[0]:
        return coll  # (a source that is not there is refused as such: renamed back, it is tracked still)
    set_triggers(conn, coll, False)
    decide_next_in_full(conn, coll.id)
    warnings.warn(TrackingLost(
        f"collection {coll.name!r}: its source {coll.source.label} does not carry its tracking triggers any more "
        f"(replaced, renamed or triggers disabled since `track`), so writes since then were not queued; it is not "
        f"tracked any more (every row is compared, every mark decided): `pgdedup track {coll.name}` tracks it again"),
        stacklevel=3)
    return replace(coll, tracked=False)


def decide_next_in_full(conn: psycopg.Connection, collection_id: int) -> None:
    """Make the next dedupe of each target decide in full (its result's change log position
    forgotten, as ``track`` does when it starts, and capture for the writes it cannot name):
    after writes no trigger saw (tracking lost), a keep-order edit among them is in no change
    log, and only a full decision sees it."""
    conn.execute("UPDATE pgdedup.results SET change_seq = NULL WHERE collection_id = %s AND target IN ('column', 'view')",
                 (collection_id,))


def queue_state(conn: psycopg.Connection, collection_id: int) -> tuple[list[int], bool]:
    """The sequence numbers of the collection's visible queue entries, and whether any of them
    asks for a full comparison (a TRUNCATE, or tracking just started)."""
    rows = conn.execute("SELECT seq, row_key IS NULL FROM pgdedup.queue WHERE collection_id = %s",
                        (collection_id,)).fetchall()
    return [r[0] for r in rows], any(r[1] for r in rows)


def consume(conn: psycopg.Connection, seqs: list[int]) -> None:
    """Delete exactly these queue entries (in the caller's transaction)."""
    conn.execute("DELETE FROM pgdedup.queue WHERE seq = ANY(%s)", (seqs,))


def _keyed_query(source: Source, collection_id: int) -> sql.Composed:
    """The rows with the given keys: (stored md5 equal?, then ``Source.rows_sql``'s tuple)."""
    return source.rows_sql(
        collection_id, sql.SQL("s.{} = ANY(%s::{}[])").format(sql.Identifier(source.key), source.key_cast),
        first=sql.SQL("g.source_md5 IS NOT DISTINCT FROM {}, ").format(source.md5_sql))


def sign_keys(conn: psycopg.Connection, collection_id: int, source: Source, keys: list[str],
              write_rows: Callable[[list[tuple]], None]) -> tuple[int, int, int]:
    """Bring the rows with these keys up to date, in the caller's transaction; returns (rows
    signed, of which new, rows forgotten).

    Reads the rows by key (the source's own key index), signs the new and changed ones with
    ``write_rows`` (``Source.rows_sql`` tuples), forgets the keys the table
    no longer has, and logs the rows that changed only in other columns (their keep-order rank
    may have moved) for the incremental dedupe.

    Then the tables whose statistics do not cover the collection are ANALYZEd (``statistics``;
    this transaction's own rows count): a collection grown from empty by these look-ups has never
    been through an index run's ANALYZE, and on statistics without it each later look-up (this
    one's, ``check``'s, ``similar``'s, a dedupe's) read every signature of the collection.
    """
    with beside_the_run(conn, source):  # (an index run's writer: its guard connection holds the table)
        rows = conn.execute(_keyed_query(source, collection_id), (keys,)).fetchall()
    changed = [r[1:] for r in rows if not r[0]]
    present = {r[1] for r in rows}
    gone = [k for k in keys if k not in present]
    conn.execute("SELECT pgdedup.log_changes(%s, %s)", (collection_id, [r[1] for r in rows if r[0]] + gone))
    forgotten = 0
    if gone:
        forgotten = conn.execute(
            "SELECT pgdedup.forget_rows(%s, ARRAY(SELECT row_id FROM pgdedup.signatures "
            "WHERE collection_id = %s AND row_key = ANY(%s)))", (collection_id, collection_id, gone)).fetchone()[0]
    if changed:
        write_rows(changed)
    statistics.refresh(conn, collection_id)
    return len(changed), sum(1 for r in changed if r[1] is None), forgotten


def sign_queued(conn: psycopg.Connection, collection_id: int, source: Source, chunk_size: int,
                write_rows: Callable[[list[tuple]], None], report: Callable[[int], object]) -> tuple[int, int, int]:
    """Work through the collection's queue in chunks of ``chunk_size`` entries (``sign_keys``
    each, its entries deleted and the collection's ``rows_indexed`` moved by what it added and
    forgot, in one transaction); returns (rows signed, of which new, rows forgotten)."""
    totals = [0, 0, 0]
    while True:
        with conn.transaction():
            entries = conn.execute(
                "SELECT seq, row_key FROM pgdedup.queue WHERE collection_id = %s AND row_key IS NOT NULL "
                "ORDER BY seq LIMIT %s", (collection_id, chunk_size)).fetchall()
            if not entries:
                return totals[0], totals[1], totals[2]
            done = sign_keys(conn, collection_id, source, sorted({k for _, k in entries}), write_rows)
            totals = [t + d for t, d in zip(totals, done)]
            consume(conn, [seq for seq, _ in entries])
            # counted with the chunk: a run killed after some chunks leaves the count true
            conn.execute("UPDATE pgdedup.collections SET rows_indexed = rows_indexed + %s WHERE collection_id = %s",
                         (done[1] - done[2], collection_id))
        report(len(entries))
