"""``pgdedup index``: stream a table's text out, sign it in chunks, COPY signatures and band keys in.

Incremental by design: the server computes an md5 of every row's raw text and compares it with
the stored one, so unchanged rows are skipped without their text ever leaving the server; new
and changed rows are (re-)signed; rows gone from the source lose their signatures and band keys.
Each chunk is one transaction, so a crash loses at most the chunk in flight and a rerun resumes
where the last run stopped. Source rows are only ever read.
"""

from __future__ import annotations

import os
import queue
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext, suppress
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from . import cluster, collections, copybin, hashing, statistics, tracking
from .connection import Db, own_dsn
from .db import (Source, beside_the_run, check_source, connect, find_table, guard_source, hold_source, resolve_dsn,
                 resolve_source)
from .errors import CollectionNotFound, InvalidArgument, PgdedupError, UnsafeOperation, message_of, translated
from .schema import COLLECTION_LOCK, require_head
from .params import Params
from .signer import SignedChunk, sign_texts
from .progress import Bar
from .workers import die_with_parent, starting

if TYPE_CHECKING:
    from multiprocessing.queues import Queue

    from distributed import Client

DEFAULT_CHUNK = 2000
#: Column order of the binary stream ``copybin.signatures`` builds.
SIGNATURE_COLUMNS = ("collection_id", "row_id", "source_md5", "text_hash", "feature_count", "signature", "buckets",
                     "row_key")


@dataclass
class IndexResult:
    """What an index run did; ``summary()`` is the line the CLI prints."""

    name: str
    source_rows: int
    signed: int
    removed: int
    seconds: float
    params: Params
    null_keys: int = 0
    queued: int | None = None  # queue entries worked through; None: every row was compared
    stats: dict[str, object] = field(default_factory=dict)

    @property
    def unchanged(self) -> int:
        return self.source_rows - self.signed

    def summary(self) -> str:
        if self.queued is not None:
            return (f"indexed {self.name} from its queue: {self.queued} changes, {self.signed} rows signed, "
                    f"{self.removed} removed, {self.source_rows} rows in all, {self.seconds:.1f} s")
        rate = self.signed / self.seconds if self.seconds > 0 else 0.0
        extra = f", {self.null_keys} rows with NULL key skipped" if self.null_keys else ""
        return (f"indexed {self.name}: {self.source_rows} rows ({self.signed} signed, {self.unchanged} unchanged, "
                f"{self.removed} removed{extra}) in {self.seconds:.1f} s, {rate:.0f} rows/s, "
                f"{self.params.bands} bands × {self.params.rows} rows")


def _stream_query(source: Source, collection_id: int, lo: str | None, hi: str | None) -> sql.Composed:
    """New and changed rows (``Source.rows_sql`` tuples) with lo <= key < hi, in key order."""
    key = sql.Identifier(source.key)
    cast = source.key_cast
    where = sql.SQL("s.{key} IS NOT NULL AND (g.row_id IS NULL OR g.source_md5 <> {md5})").format(
        key=key, md5=source.md5_sql)
    if lo is not None:
        where += sql.SQL(" AND s.{} >= {}::{}").format(key, sql.Literal(lo), cast)
    if hi is not None:
        where += sql.SQL(" AND s.{} < {}::{}").format(key, sql.Literal(hi), cast)
    return source.rows_sql(collection_id, where) + sql.SQL(" ORDER BY s.{}").format(key)


def _key_ranges(conn: psycopg.Connection, source: Source, parts: int) -> list[tuple[str | None, str | None]]:
    """``parts`` key ranges [lo, hi) of about equal row counts (quantiles of the key)."""
    if parts <= 1:
        return [(None, None)]
    cuts = conn.execute(
        sql.SQL("SELECT percentile_disc(%s::float8[]) WITHIN GROUP (ORDER BY {k})::text[] FROM {t}")
        .format(k=sql.Identifier(source.key), t=source.table_sql),
        ([i / parts for i in range(1, parts)],)).fetchone()[0] or []
    edges: list[str | None] = [None, *dict.fromkeys(c for c in cuts if c is not None), None]
    return list(zip(edges[:-1], edges[1:]))


def _remove_vanished(conn: psycopg.Connection, source: Source, collection_id: int) -> int:
    """Forget rows whose key is no longer in the source table; returns how many.

    The anti-join is planned without nested loops: statistics that do not cover this collection
    yet would otherwise make it quadratic. Nothing is written (no lock on the tables taken)
    when nothing vanished.
    """
    with conn.transaction():
        conn.execute("SET LOCAL enable_nestloop = off")
        gone = conn.execute(sql.SQL(
            "SELECT g.row_id, g.row_key FROM pgdedup.signatures g WHERE g.collection_id = %s "
            "AND NOT EXISTS (SELECT 1 FROM {table} s WHERE s.{key}::text = g.row_key)"
        ).format(table=source.table_sql, key=sql.Identifier(source.key)), (collection_id,)).fetchall()
        if gone:
            _results_now_stale(conn, collection_id)
            conn.execute("SELECT pgdedup.log_changes(%s, %s)", (collection_id, [k for _, k in gone]))
            conn.execute("SELECT pgdedup.forget_rows(%s, %s)", (collection_id, [i for i, _ in gone]))
    return len(gone)


def _flush_staged(conn: psycopg.Connection, collection_id: int) -> None:
    """Move the band keys a crashed first load left staged into ``band_keys``, before the run
    forgets or compares any row (``forget_rows`` deletes from ``band_keys`` only).

    Their rows were logged as changes when their chunks committed, but the collection's lock was
    free after the crash, so a dedupe may have run and decided them without their band keys
    (invisible while staged) and so passed their changes: they are logged again and the
    results marked stale, and the next dedupe re-examines them. Nothing is written when nothing
    is staged.
    """
    with conn.transaction():
        staged = conn.execute("SELECT EXISTS (SELECT 1 FROM pgdedup.band_keys_staged WHERE collection_id = %s)",
                              (collection_id,)).fetchone()[0]
        if staged:
            _results_now_stale(conn, collection_id)
            # planned on statistics that may not cover this collection (a crash soon after the
            # start): a nested loop over the staged keys would be quadratic
            conn.execute("SET LOCAL enable_nestloop = off")
            conn.execute("SELECT pgdedup.log_changes(%s, ARRAY(SELECT g.row_key FROM pgdedup.signatures g WHERE "
                         "g.collection_id = %s AND g.row_id IN (SELECT s.row_id FROM pgdedup.band_keys_staged s "
                         "WHERE s.collection_id = %s)))", (collection_id, collection_id, collection_id))
            conn.execute("SELECT pgdedup.flush_band_keys(%s)", (collection_id,))


def _move_staged(writer: psycopg.Connection, dsn: str, collection_id: int, bands: int, sessions: int) -> str:
    """Move a staged first load's band keys into ``band_keys``; returns how: "rebuilt" (the table
    was empty, so its primary key was dropped and built again over the keys,
    ``pgdedup.rebuild_band_keys``, revision 41: ~1.6x faster at a million rows) or "inserted"
    (sorted inserts in ``sessions`` sessions, ``_flush_in_parallel``). The rebuild's transaction
    is committed (or gives its locks back) before any insert starts, so the inserting sessions
    never wait for it.

    Raises:
        psycopg.Error: a session failed (keys not moved stay staged, for the next run).
    """
    with writer.transaction():
        writer.execute("SELECT pgdedup.assert_locked_by(%s, %s)", (collection_id, writer.info.backend_pid))
        if writer.execute("SELECT pgdedup.rebuild_band_keys(%s)", (collection_id,)).fetchone()[0] is not None:
            return "rebuilt"
    _flush_in_parallel(dsn, collection_id, bands, sessions, writer.info.backend_pid)
    writer.execute("SELECT pgdedup.flush_band_keys(%s)", (collection_id,))  # empties the staging table
    return "inserted"


def _flush_in_parallel(dsn: str, collection_id: int, bands: int, sessions: int, lock_holder: int) -> None:
    """Move a staged load's band keys into ``band_keys`` in ``sessions`` sessions at once, each the
    keys of a share of the bands in one transaction (``flush_band_keys``, revision 18).

    At the end of a load the signing processes have finished: one session's sorted insert of
    every key (1,000,000 rows: ~50 s) would leave the other cores idle. Each share's transaction
    first checks that backend ``lock_holder`` (the run's session) still holds the collection's
    lock, as every chunk's does: a share orphaned by a dead run must not race the next run's
    move. A share that fails leaves its keys staged, for the next run.

    Raises:
        psycopg.Error: a session failed (the shares already committed stay moved).
    """
    n = max(1, min(sessions, bands))
    shares = [list(range(bands * i // n, bands * (i + 1) // n)) for i in range(n)]  # contiguous bands

    def move(share: list[int]) -> None:
        with connect(dsn, autocommit=True, application_name="pgdedup index (moving band keys)") as conn:
            with conn.transaction():
                conn.execute("SELECT pgdedup.assert_locked_by(%s, %s)", (collection_id, lock_holder))
                conn.execute("SELECT pgdedup.flush_band_keys(%s, %s)", (collection_id, share))

    with ThreadPoolExecutor(len(shares)) as pool:  # the work is the server's: threads suffice
        for done in [pool.submit(move, share) for share in shares]:
            done.result()


#: A full run VACUUMs what it wrote when it signed or removed at least 1 / VACUUM_SHARE of the rows.
VACUUM_SHARE = 20
#: How long that VACUUM waits for a table's lock before leaving the table to autovacuum.
VACUUM_LOCK_TIMEOUT = "5s"


def _vacuum_written(dsn: str, name: str) -> None:
    """VACUUM the tables a full index run writes (``signatures``, and ``band_keys`` with
    ANALYZE: a few scalar columns; ``signatures`` is analyzed by the run), so that the dedupe
    after it reads their keys by index-only scans, planned on current statistics: a page stays
    out of the visibility map from its first write until a VACUUM, and each of its index entries
    then costs a heap visit. Measured at 200,000 rows: a full dedupe by estimate took 7.4-7.6 s
    on the tables as a first load left them, 4.6 s once they were vacuumed (0.2 s); at 1M rows,
    after a few thousand changed rows, the scan of the band keys took 12.5 s, 7.5 s vacuumed.
    Autovacuum does it too, but only after a fifth of a table has been written since its last
    pass (a minute after a first load; many changes later on a live collection).

    ``index`` calls it after a full run that wrote at least 1/``VACUUM_SHARE`` of the rows (a
    first load always), once the run's locks are released. Runs from the queue and small
    reruns leave it to autovacuum: their pages are few, and their dead band keys could make
    the pass scan every index of both tables. The pass keeps the tables' size
    (``TRUNCATE OFF``: no exclusive lock on them, however brief).

    PostgreSQL marks a page visible to all only when no snapshot could still miss its rows and
    their commits are flushed to the WAL, which a server with ``synchronous_commit = off`` does
    a fraction of a second later: the run's last transaction then commits with ``local``, which
    flushes every chunk's commit before it. An older snapshot held elsewhere (a long
    transaction of an application) leaves pages unmarked; the pass then only costs its time.

    Best effort, its own connection: the run is committed, so a table whose lock is not had
    within ``VACUUM_LOCK_TIMEOUT`` (another session vacuuming or analyzing it; an autovacuum
    worker is cancelled by PostgreSQL after ``deadlock_timeout``), a role that may not vacuum
    them (PostgreSQL skips the table with a warning in its log) or any failure leaves the work
    to autovacuum."""
    with suppress(psycopg.Error, PgdedupError), \
            connect(dsn, autocommit=True, application_name=f"pgdedup index {name} (vacuum)") as conn:
        conn.execute("SELECT pg_catalog.set_config('lock_timeout', %s, false)", (VACUUM_LOCK_TIMEOUT,))
        for vacuum in ("VACUUM (TRUNCATE OFF) pgdedup.signatures", "VACUUM (TRUNCATE OFF, ANALYZE) pgdedup.band_keys"):
            with suppress(psycopg.Error):
                conn.execute(vacuum)


def _results_now_stale(conn: psycopg.Connection, collection_id: int) -> None:
    """Bump the collection's index version: results computed before are stale from now on.
    Done before (or with) the first write, so a crash after it errs on the side of "stale"."""
    conn.execute("UPDATE pgdedup.collections SET index_version = index_version + 1 WHERE collection_id = %s",
                 (collection_id,))


def write_chunk(conn: psycopg.Connection, collection_id: int, rows: list[tuple], params: Params,
                band_table: str, lock_holder: int, partitioned: bool = False) -> None:
    """Sign one chunk of ``Source.rows_sql`` tuples and store it in one transaction (old versions
    of changed rows replaced); ``partitioned``: their partition values salt text hashes and buckets.

    ``band_table`` is ``band_keys``, or ``band_keys_staged`` during a large first load (``_stages``).
    The transaction first checks that backend ``lock_holder`` (the run's own session) still holds
    the collection's lock, so nothing is written for a run that has died or been replaced.

    The chunk is signed in a thread while ``store_chunk`` runs the statements that come before
    its COPY (the lock check, the change log, forgetting the old versions of changed rows): the
    signing is the client's work, those are the server's, and they need nothing from each other.
    From the tracking queue, 1,100 changed rows of ~2.6 KB took ~0.15 s to sign and ~0.14 s of
    server time before the COPY (1M-row collection).
    """
    texts = ["\n".join(c for c in r[4:] if c is not None) for r in rows]
    with ThreadPoolExecutor(1, thread_name_prefix="pgdedup-sign") as signer:
        signing = signer.submit(sign_texts, texts, params, [r[3] for r in rows] if partitioned else None)
        store_chunk(conn, collection_id, rows, signing.result, band_table, lock_holder)


def store_chunk(conn: psycopg.Connection, collection_id: int, rows: list[tuple], signed: Callable[[], SignedChunk],
                band_table: str, lock_holder: int) -> None:
    """The server's half of ``write_chunk``: store the signed rows in one transaction (apart so
    that bench/scaling.py can time the server's rate without the signing). ``signed`` gives the
    rows' signatures; it is called once the statements before the COPY have run."""
    keys = [r[0] for r in rows]
    row_ids = hashing.row_ids(keys)
    existing = [r[1] for r in rows if r[1] is not None]
    with conn.transaction():
        conn.execute("SELECT pgdedup.assert_locked_by(%s, %s)", (collection_id, lock_holder))
        conn.execute("SELECT pgdedup.log_changes(%s, %s)", (collection_id, keys))  # for incremental dedupe
        if existing:
            conn.execute("SELECT pgdedup.forget_rows(%s, %s)", (collection_id, existing))
        chunk = signed()
        stream = copybin.signatures(collection_id, keys, row_ids, [r[2] for r in rows],
                                    chunk.text_hashes, chunk.feature_counts, chunk.signatures, chunk.buckets)
        with copybin.copy_into(conn, "signatures", SIGNATURE_COLUMNS) as copy:
            copy.write(stream)
        keep = chunk.feature_counts > 0
        with copybin.copy_into(conn, band_table, ("collection_id", "band", "bucket", "row_id")) as copy:
            copy.write(copybin.band_keys(collection_id, row_ids[keep], chunk.buckets[keep]))


@dataclass(frozen=True)
class RangeJob:
    """What a worker needs to sign one key range (picklable: it may cross into a spawned process)."""

    dsn: str
    collection_id: int
    name: str
    source: Source
    params: Params
    chunk_size: int
    band_table: str
    lock_holder: int  # backend pid of the run's session, which holds the collection's lock


def sign_range(job: RangeJob, lo: str | None, hi: str | None, report: Callable[[int], object]) -> int:
    """Stream, sign and store the new/changed rows of one key range; returns rows signed."""
    signed = 0
    app = f"pgdedup index {job.name} (worker)"
    with connect(job.dsn, autocommit=True, application_name=app) as writer, \
            connect(job.dsn, application_name=app) as reader, beside_the_run(reader, job.source), \
            reader.cursor(name="pgdedup_index") as cur:
        # the join with pgdedup.signatures is planned on statistics that may not cover this
        # collection yet (a new collection, a resume after a crash): a nested loop planned for
        # "no rows" becomes quadratic, so only hash or merge joins are allowed here
        reader.execute("SET LOCAL enable_nestloop = off")
        cur.itersize = job.chunk_size
        cur.execute(_stream_query(job.source, job.collection_id, lo, hi))
        while rows := cur.fetchmany(job.chunk_size):
            if not signed:
                _results_now_stale(writer, job.collection_id)
            try:
                write_chunk(writer, job.collection_id, rows, job.params, job.band_table, job.lock_holder,
                            job.source.partition is not None)
            except psycopg.errors.UniqueViolation as exc:  # the keys were proved unique before the run
                raise UnsafeOperation(f"key column {job.source.key!r} of {job.source.label}: two rows got the same "
                                      "row id: the key stopped being unique during the run, or two keys' xxh3 "
                                      f"hashes collide (please report it) ({exc.diag.message_detail or 'duplicate key'})"
                                      ) from exc
            signed += len(rows)
            report(len(rows))
    return signed


def _worker(job: RangeJob, lo: str | None, hi: str | None, parent: int, results: "Queue[tuple[str, object]]") -> None:
    """Entry point of a worker process: one key range; reports ("progress", n), then ("done", n)
    or ("error", message)."""
    die_with_parent(parent)
    try:
        results.put(("done", sign_range(job, lo, hi, lambda n: results.put(("progress", n)))))
    except Exception as exc:  # every failure goes back to the parent, which raises it
        results.put(("error", message_of(exc) if isinstance(exc, psycopg.Error) else str(exc)))


def _sign_parallel(job: RangeJob, ranges: list[tuple[str | None, str | None]], bar: Bar) -> int:
    """Sign key ranges in worker processes (forked or spawned: ``workers.starting``), each on
    connections of its own.

    The workers die with this process, are terminated when it stops early (an error, Ctrl-C),
    and are left to exit by themselves when they have all finished.

    Raises:
        PgdedupError: a worker failed or died.
    """
    procs = []
    signed = finished = 0
    try:
        with starting() as ctx:
            results = ctx.Queue()
            for lo, hi in ranges:
                procs.append(ctx.Process(target=_worker, args=(job, lo, hi, os.getpid(), results), daemon=True))
                procs[-1].start()
        while finished < len(procs):
            try:
                kind, value = results.get(timeout=0.5)
            except queue.Empty:
                dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
                if dead and results.empty():
                    raise PgdedupError(f"a worker process died (exit code {dead[0]})") from None
                continue
            if kind == "progress":
                bar.update(value)
            elif kind == "done":
                signed += int(value)  # type: ignore[call-overload]
                finished += 1
            else:
                raise PgdedupError(str(value))
        for p in procs:  # each has said "done" and is exiting: no signal for it
            p.join(timeout=5)
        return signed
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join()


#: Longest collection name: "<name>_duplicates" must fit PostgreSQL's 63-byte identifiers.
MAX_NAME_BYTES = 52


#: Bytes a band key takes in ``band_keys``' primary key index (~32 B an entry, plus page overhead).
BAND_KEY_INDEX_BYTES = 40
#: A first load writes its band keys straight into ``band_keys`` while their index entries would
#: take at most this many times shared_buffers, and stages them above it (see ``_stages``).
DIRECT_SHARE_OF_BUFFERS = 2.0


def _stages(conn: psycopg.Connection, rows: int, params: Params) -> bool:
    """Whether a first load of ``rows`` rows stages its band keys in ``band_keys_staged`` and moves
    them into ``band_keys`` at the end (``_move_staged``).

    Written straight into ``band_keys``, the keys update its primary key index as the workers'
    COPYs go, which overlaps with signing; staged, the sorted insert runs alone at the end (20,000
    rows: ~1 s of a ~3 s index). The direct way pays a random index page per key, cheap while
    the load's part of the index (one contiguous range: the collection id leads the key) is
    cached. Measured end to end on one 2-core machine with 128 MB of shared_buffers, direct
    against staged: 1.30x faster at 20,000 rows, 1.22x at 300,000 (index part ~1.5x
    shared_buffers), equal at 600,000 (~3x); so large loads stage.
    """
    buffers = conn.execute("SELECT pg_catalog.pg_size_bytes(pg_catalog.current_setting('shared_buffers'))").fetchone()[0]
    return rows * params.bands * BAND_KEY_INDEX_BYTES > DIRECT_SHARE_OF_BUFFERS * buffers


def default_workers(rows: int) -> int:
    """One worker per core, but no more than one per 25,000 rows (a process costs ~1 s to start)."""
    return max(1, min(os.cpu_count() or 1, rows // 25_000))


def _check_run_options(chunk_size: int, workers: int | None) -> None:
    """Raises InvalidArgument for a chunk size or worker count below 1."""
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise InvalidArgument(f"chunk_size must be a positive integer, not {chunk_size!r}")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise InvalidArgument(f"workers must be a positive integer, not {workers!r}")


def check_unique_key(conn: psycopg.Connection, source: Source) -> None:
    """Make sure no two rows share a key, before anything is signed.

    A valid unique index on the key column alone (PRIMARY KEY, UNIQUE) proves it for free;
    otherwise (a view, a table without one) every run counts the keys.

    Raises:
        UnsafeOperation: a key occurs twice (the message names one).
    """
    proved = conn.execute(
        """SELECT EXISTS (
               SELECT 1 FROM pg_catalog.pg_index i JOIN pg_catalog.pg_attribute a
                 ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
               WHERE i.indrelid = (pg_catalog.quote_ident(%s) || '.' || pg_catalog.quote_ident(%s))::regclass
                 AND i.indisunique AND i.indisvalid AND i.indnkeyatts = 1 AND i.indpred IS NULL
                 AND i.indexprs IS NULL AND a.attname = %s)""",
        (source.schema, source.table, source.key)).fetchone()[0]
    if proved:
        return
    dup = conn.execute(sql.SQL(
        "SELECT {k}::text, count(*) FROM {t} WHERE {k} IS NOT NULL GROUP BY {k} HAVING count(*) > 1 LIMIT 1"
    ).format(k=sql.Identifier(source.key), t=source.table_sql)).fetchone()
    if dup:
        raise UnsafeOperation(
            f"key column {source.key!r} of {source.label} is not unique: {dup[0]!r} occurs {dup[1]} times; "
            "pgdedup needs a unique key (a PRIMARY KEY or UNIQUE constraint also makes this check free)")


def _check_named_source(conn: psycopg.Connection, table: str, schema: str | None,
                        stored: collections.Collection) -> None:
    """Refuse ``index TABLE --name NAME`` (no key or text columns) when TABLE is not the source
    the collection ``NAME`` indexes: the run would index the stored source, not the table named.

    Raises:
        PgdedupError: no such table.
        InvalidArgument: another table than the collection's source.
    """
    found = find_table(conn, table, schema)
    if found != (stored.source.schema, stored.source.table):
        raise InvalidArgument(
            f"collection {stored.name!r} indexes {stored.source.label}, not {found[0]}.{found[1]}: to index "
            f"that table into it, give its key and text columns with --reindex; to bring the collection up to "
            f"date, `pgdedup index {stored.name}`")


def index(table: str, key: str | None = None, text: list[str] | tuple[str, ...] | None = None, *,
          name: str | None = None, schema: str | None = None, params: Params | None = None,
          reindex: bool = False, full: bool = False, dsn: Db = None, chunk_size: int = DEFAULT_CHUNK,
          progress: bool | None = None, workers: int | None = 1, partition_by: str | None = None,
          scheduler: str | None = None) -> IndexResult:
    """Index ``table`` into collection ``name`` (default: the table name); see the module docstring.

    Without ``key`` and ``text``, ``table`` names an existing collection, which is brought up to
    date with its stored source and parameters. On a tracked collection (``tracking.track``)
    only the queued keys are read and signed, without scanning the table; ``full`` (and every
    untracked collection) compares every row instead.

    ``partition_by`` (a new collection's setting, like its columns) names a column whose values
    partition the table: rows are compared only with rows of an equal value (tenants, feeds;
    NULL is one more value). ``table`` may be a view, e.g. a subset of a table (the last 30
    days); such a collection is deduped without ``alter`` and cannot be tracked.

    ``workers`` processes each sign one key range (None: ``default_workers``, as the CLI does);
    results do not depend on it. Worker processes are forked, or spawned if the calling process
    runs other threads (``workers.starting``), so a script that asks for more than one should
    call this under ``if __name__ == "__main__":``. With ``scheduler`` (a Dask
    scheduler's address, see ``pgdedup.cluster``) the key ranges are tasks on that cluster
    instead, ``workers`` of them (None: one per thread of the cluster); a run from the queue of
    a tracked collection stays local. ``progress`` None shows a progress bar when stderr is a
    terminal.

    Everything is checked (table, columns, parameters, unique keys) before the first write; then
    the collection's lock is taken and held for the whole run, and every chunk's transaction
    checks it is still held.

    Raises:
        InvalidArgument: bad parameters, or settings that differ from the stored ones without ``reindex``.
        UnsafeOperation: the key is not unique.
        CollectionBusy: another run (index, dedupe, ...) holds the collection's lock.
        PgdedupError: a missing table or column, a failed worker, a connection failure, a
            scheduler that cannot be reached.
    """
    _check_run_options(chunk_size, workers)
    if name == "":
        raise InvalidArgument("a collection name cannot be empty (leave it out to name the collection after its table)")
    if (key is None) != (text is None):
        raise InvalidArgument("give both the key and the text columns (a new collection), or neither (an existing one)")
    if key is None and partition_by is not None:
        raise InvalidArgument("the partition column is a setting of a new collection (with its key and text "
                              "columns); an existing one keeps the one it was indexed with")
    dsn = resolve_dsn(own_dsn(dsn, "index"))
    started, t0 = datetime.now(timezone.utc), time.perf_counter()
    with translated(), _cluster(scheduler) as client, \
            connect(dsn, autocommit=True, application_name="pgdedup index") as writer, \
            connect(dsn, application_name="pgdedup index (source lock)") as guard:
        if key is None:  # an existing collection, with what it stores
            stored = collections.get(writer, name or table)  # its source: checked by guard_source below
            if name is not None and (table != name or schema is not None):
                _check_named_source(writer, table, schema, stored)
            name, source, params = stored.name, stored.source, params or stored.params
        else:
            source = resolve_source(writer, table, key, text, schema, partition_by)  # before any schema change
            params = params or Params()
        name = name or source.table
        if not 0 < len(name.encode()) <= MAX_NAME_BYTES:
            raise InvalidArgument(f"a collection name has 1 to {MAX_NAME_BYTES} bytes (its view is NAME_duplicates, "
                                  f"and PostgreSQL names have at most 63): {name!r}; choose one with --name")
        # held by this transaction until the run ends: every read is of what was checked (the
        # server's idle-in-transaction timeout, if set, must not end it while the run works)
        guard.execute("SELECT pg_catalog.set_config('idle_in_transaction_session_timeout', '0', false)")
        guard.commit()
        # the checks are pgdedup's SQL functions: a first run makes the schema, kept only if they pass
        require_head(writer, dsn, check=lambda conn: check_source(conn, source, name))
        existing = collections.find(writer, name)
        if existing is not None:  # (before the hold: untracking drops triggers, maybe on the source)
            tracking.untrack_if_lost(writer, existing)
        # the other roles' tables it reads are held against new indexes for the whole run, first,
        # so that the check (under the table's own lock) sees any that committed while it waited
        hold_source(guard, source)
        # writes addressed to a partition or an inheritance child fire no trigger of the parent,
        # and writes made through a parent none of its partition's or child's
        partitioned = guard_source(guard, source, name) == "p" or writer.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_inherits WHERE pgdedup.relation_of(%s, %s) IN (inhparent, inhrelid))",
            (source.schema, source.table)).fetchone()[0]
        writer.execute("SELECT pg_catalog.set_config('application_name', %s, false)", (f"pgdedup index {name}",))
        with beside_the_run(writer, source):
            check_unique_key(writer, source)
        # an existing collection named alone is never made again (a drop that committed since
        # brought it back as a new, untracked one): under its lock it must still be the one found,
        # read afresh (an untracking above changed it)
        coll = collections.find_or_create(writer, name, source, params) if key is not None else stored
        writer.execute("SELECT pgdedup.lock_collection(%s, true)", (coll.id,))
        current = collections.find(writer, name)
        if current is None or current.id != coll.id:
            raise CollectionNotFound(f"collection {name!r} was dropped while this index started")
        coll = current
        try:
            with writer.transaction():
                coll = collections.settle(writer, coll, source, params, reindex)
            result = _run(writer, dsn, coll, source, chunk_size, progress, workers, t0, full or partitioned, client)
            with writer.transaction():
                # flushed before it returns, with every chunk's commit before it (see _vacuum_written)
                writer.execute("SELECT pg_catalog.set_config('synchronous_commit', 'local', true) "
                               "WHERE pg_catalog.current_setting('synchronous_commit') = 'off'")
                writer.execute(
                    "UPDATE pgdedup.collections SET rows_indexed = CASE WHEN %s THEN %s ELSE (SELECT count(*) "
                    "FROM pgdedup.signatures WHERE collection_id = %s) END, indexed_at = now() WHERE collection_id = %s",
                    (result.queued is not None, result.source_rows, coll.id, coll.id))
                writer.execute("INSERT INTO pgdedup.runs (collection_id, kind, started_at, stats) "
                               "VALUES (%s, 'index', %s, %s)", (coll.id, started, Jsonb(result.stats)))
        finally:
            if not writer.closed and not writer.broken:
                writer.execute("SELECT pg_catalog.pg_advisory_unlock(%s, %s)", (COLLECTION_LOCK, coll.id))
    written = result.signed + result.removed
    if result.queued is None and written and written * VACUUM_SHARE >= result.source_rows:
        _vacuum_written(dsn, name)  # the run's locks are released: nothing waits for this
    return result


def _cluster(scheduler: str | None) -> AbstractContextManager["Client | None"]:
    """The Dask client of a run with ``scheduler`` (connected before anything is written), else None."""
    return nullcontext() if scheduler is None else cluster.connect(scheduler)


def _run(writer: psycopg.Connection, dsn: str, coll: collections.Collection, source: Source, chunk_size: int,
         progress: bool | None, workers: int | None, t0: float, full: bool, client: "Client | None") -> IndexResult:
    """The locked part of an index run: from the queue of a tracked collection, else (or with
    ``full``) by comparing every row (forget vanished rows, sign new and changed ones). ``index``
    asks for ``full`` on a partitioned source, one with inheritance children, or one that is a
    partition or a child itself, too: its tracking triggers sit on that table and see the writes
    addressed to it, not those addressed to a partition or child, nor those made through a parent."""
    seqs, needs_full = tracking.queue_state(writer, coll.id) if coll.tracked else ([], False)
    if coll.tracked and not (full or needs_full or coll.rows_indexed == 0):
        return _run_queue(writer, coll, source, chunk_size, progress, t0, len(seqs))
    if seqs:  # a full comparison sees text changes; the queued keys may have changed in other columns too
        writer.execute("SELECT pgdedup.log_changes(%s, ARRAY(SELECT row_key FROM pgdedup.queue "
                       "WHERE seq = ANY(%s) AND row_key IS NOT NULL))", (coll.id, seqs))
    result = _run_full(writer, dsn, coll, source, chunk_size, progress, workers, t0, client)
    if seqs:  # every change they announce was committed before the full comparison read the table
        with writer.transaction():
            tracking.consume(writer, seqs)
    return result


def _run_queue(writer: psycopg.Connection, coll: collections.Collection, source: Source, chunk_size: int,
               progress: bool | None, t0: float, queued: int) -> IndexResult:
    """Sign the queued keys of a tracked collection (see ``tracking.sign_queued``); entries that
    arrive meanwhile are taken too, and ``queued`` in the result counts every entry worked through.
    An empty queue at the start is left alone (what arrives waits for the next run), so results
    are marked stale before anything is written."""
    worked = signed = removed = 0
    if queued:
        _results_now_stale(writer, coll.id)
        show = sys.stderr.isatty() if progress is None else progress
        with Bar(total=queued, unit="keys", desc=f"indexing {coll.name} (queue)", disable=not show,
                  file=sys.stderr) as bar:
            def report(entries: int) -> None:
                nonlocal worked
                worked += entries
                bar.update(entries)

            signed, _, removed = tracking.sign_queued(
                writer, coll.id, source, chunk_size,
                lambda rows: write_chunk(writer, coll.id, rows, coll.params, "band_keys", writer.info.backend_pid,
                                        source.partition is not None),
                report)
    seconds = time.perf_counter() - t0
    rows = writer.execute("SELECT rows_indexed FROM pgdedup.collections WHERE collection_id = %s",
                          (coll.id,)).fetchone()[0]  # (counted by each chunk: no count over the whole collection)
    result = IndexResult(coll.name, rows, signed, removed, seconds, coll.params, queued=worked)
    result.stats = {"mode": "queue", "queued": worked, "signed": signed, "removed": removed,
                    "seconds": round(seconds, 3)}
    return result


def _run_full(writer: psycopg.Connection, dsn: str, coll: collections.Collection, source: Source, chunk_size: int,
              progress: bool | None, workers: int | None, t0: float, client: "Client | None") -> IndexResult:
    """Compare every row: forget vanished rows, sign new and changed ones (key ranges signed
    here, by worker processes, or as tasks on ``client``'s cluster)."""
    _flush_staged(writer, coll.id)
    with beside_the_run(writer, source):  # the guard connection holds the table
        removed = _remove_vanished(writer, source, coll.id)
        source_rows, null_keys = writer.execute(
            sql.SQL("SELECT count(*) FILTER (WHERE {k} IS NOT NULL), count(*) FILTER (WHERE {k} IS NULL) FROM {t}")
            .format(k=sql.Identifier(source.key), t=source.table_sql)).fetchone()
        if workers is not None:
            parts = workers
        else:
            parts = cluster.slots(client) if client is not None else default_workers(source_rows)
        # never a worker with less than a chunk of rows: each costs a process start and a connection
        ranges = _key_ranges(writer, source, min(parts, max(1, -(-source_rows // chunk_size))))
    show = sys.stderr.isatty() if progress is None else progress
    total = source_rows if coll.rows_indexed == 0 else None
    bands = "band_keys_staged" if coll.rows_indexed == 0 and _stages(writer, source_rows, coll.params) else "band_keys"
    job = RangeJob(dsn, coll.id, coll.name, source, coll.params, chunk_size, bands, writer.info.backend_pid)
    with Bar(total=total, unit="rows", desc=f"indexing {coll.name}", disable=not show, file=sys.stderr) as bar:
        if client is not None:
            signed = cluster.sign_ranges(client, job, ranges, bar.update)
        elif len(ranges) == 1:
            signed = sign_range(job, None, None, bar.update)
        else:
            signed = _sign_parallel(job, ranges, bar)
    moved, move_started = "direct", time.perf_counter()
    if bands == "band_keys_staged":
        moved = _move_staged(writer, dsn, coll.id, coll.params.bands, len(ranges))
    move_seconds = time.perf_counter() - move_started
    if signed or removed:  # what was just written is what the next run's joins are planned on
        statistics.analyze(writer, ["signatures"])  # (as the tables' owner, for a role granted it)
        statistics.refresh(writer, coll.id)  # (band_keys, for a role whose VACUUM ANALYZE is skipped)
    seconds = time.perf_counter() - t0
    result = IndexResult(coll.name, source_rows, signed, removed, seconds, coll.params, null_keys)
    result.stats = {"mode": "full", "source_rows": source_rows, "signed": signed, "removed": removed,
                    "null_keys": null_keys, "band_keys": moved, "seconds": round(seconds, 3)}
    if moved != "direct":
        result.stats["move_seconds"] = round(move_seconds, 3)
    return result
