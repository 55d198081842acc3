"""``pgdedup index``: stream a table's text out, sign it in chunks, COPY signatures and band keys in.

Incremental by design: the server computes an md5 of every row's raw text and compares it with
the stored one, so unchanged rows are skipped without their text ever leaving the server; new
and changed rows are (re-)signed; rows gone from the source lose their signatures and band keys.
Each chunk is one transaction, so a crash loses at most the chunk in flight and a rerun resumes
where the last run stopped. Source rows are only ever read.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone

import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb
from tqdm import tqdm

from . import collections, copybin, hashing
from .db import PgdedupError, Source, connect, resolve_dsn, resolve_source
from .migrate import migrate
from .params import Params
from .signer import sign_texts

DEFAULT_CHUNK = 2000
_LOCK_CLASS = 0x70676464  # 'pgdd': advisory-lock namespace, second key is the collection id


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
    stats: dict[str, object] = field(default_factory=dict)

    @property
    def unchanged(self) -> int:
        return self.source_rows - self.signed

    def summary(self) -> str:
        rate = self.signed / self.seconds if self.seconds > 0 else 0.0
        extra = f", {self.null_keys} rows with NULL key skipped" if self.null_keys else ""
        return (f"indexed {self.name}: {self.source_rows} rows ({self.signed} signed, {self.unchanged} unchanged, "
                f"{self.removed} removed{extra}) in {self.seconds:.1f} s, {rate:.0f} rows/s, "
                f"{self.params.bands} bands × {self.params.rows} rows")


def _stream_query(source: Source, collection_id: int, lo: str | None, hi: str | None) -> sql.Composed:
    """New and changed rows (key, existing row id, md5, text columns) with lo <= key < hi, in key order."""
    key = sql.Identifier(source.key)
    md5 = sql.SQL("md5({})::uuid").format(source.text_sql)
    cast = source.key_cast
    bounds = sql.SQL("")
    if lo is not None:
        bounds += sql.SQL(" AND s.{} >= {}::{}").format(key, sql.Literal(lo), cast)
    if hi is not None:
        bounds += sql.SQL(" AND s.{} < {}::{}").format(key, sql.Literal(hi), cast)
    return sql.SQL(
        "SELECT s.{key}::text, g.row_id, {md5}, {cols} FROM {table} s "
        "LEFT JOIN pgdedup.signatures g ON g.collection_id = {cid} AND g.row_key = s.{key}::text "
        "WHERE s.{key} IS NOT NULL AND (g.row_id IS NULL OR g.source_md5 <> {md5}){bounds} ORDER BY s.{key}"
    ).format(key=key, md5=md5, table=source.table_sql, cid=sql.Literal(collection_id), bounds=bounds,
             cols=sql.SQL(", ").join(sql.SQL("s.{}::text").format(sql.Identifier(c)) for c in source.text_columns))


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
    """Forget rows whose key is no longer in the source table."""
    ids = sql.SQL(
        "SELECT pgdedup.forget_rows({cid}, ARRAY(SELECT g.row_id FROM pgdedup.signatures g "
        "WHERE g.collection_id = {cid} AND NOT EXISTS (SELECT 1 FROM {table} s WHERE s.{key}::text = g.row_key)))"
    ).format(cid=sql.Literal(collection_id), table=source.table_sql, key=sql.Identifier(source.key))
    return int(conn.execute(ids).fetchone()[0])


def _write_chunk(conn: psycopg.Connection, collection_id: int, rows: list[tuple], params: Params,
                 band_table: str) -> None:
    """Sign one chunk and store it in one transaction (old versions of changed rows replaced).

    ``band_table`` is ``pgdedup.band_keys``, or ``pgdedup.band_keys_staged`` during a first load.
    """
    texts = ["\n".join(c for c in r[3:] if c is not None) for r in rows]
    signed = sign_texts(texts, params)
    keys = [r[0] for r in rows]
    row_ids = hashing.row_ids(keys)
    existing = [r[1] for r in rows if r[1] is not None]
    with conn.transaction():
        if existing:
            conn.execute("SELECT pgdedup.forget_rows(%s, %s)", (collection_id, existing))
        stream = copybin.signatures(collection_id, keys, row_ids, [r[2] for r in rows],
                                    signed.text_hashes, signed.feature_counts, signed.signatures, signed.buckets)
        with conn.cursor().copy(
                "COPY pgdedup.signatures (collection_id, row_id, source_md5, text_hash, feature_count, "
                "signature, buckets, row_key) FROM STDIN (FORMAT BINARY)") as copy:
            copy.write(stream)
        keep = signed.feature_counts > 0
        with conn.cursor().copy(
                f"COPY {band_table} (collection_id, band, bucket, row_id) FROM STDIN (FORMAT BINARY)") as copy:
            copy.write(copybin.band_keys(collection_id, row_ids[keep], signed.buckets[keep]))


def _sign_range(dsn: str, collection_id: int, source: Source, params: Params, lo: str | None, hi: str | None,
                chunk_size: int, band_table: str, report: Callable[[int], object]) -> int:
    """Stream, sign and store the new/changed rows of one key range; returns rows signed."""
    signed = 0
    with connect(dsn, autocommit=True) as writer, connect(dsn) as reader, \
            reader.cursor(name="pgdedup_index") as cur:
        cur.itersize = chunk_size
        cur.execute(_stream_query(source, collection_id, lo, hi))
        while rows := cur.fetchmany(chunk_size):
            try:
                _write_chunk(writer, collection_id, rows, params, band_table)
            except psycopg.errors.UniqueViolation as exc:
                what = ("two keys hash to the same row id (xxh3 collision); please report it"
                        if "row_id" in (exc.diag.constraint_name or "") else "it is not unique")
                raise PgdedupError(f"key column {source.key!r} of {source.label}: {what} "
                                   f"({exc.diag.message_detail or 'duplicate key'})") from exc
            signed += len(rows)
            report(len(rows))
    return signed


def _worker(args: tuple, progress: "mp.Queue[int]") -> int:
    """Entry point of a worker process: one key range."""
    return _sign_range(*args, report=progress.put)


def _sign_parallel(dsn: str, coll_id: int, source: Source, params: Params,
                   ranges: list[tuple[str | None, str | None]], chunk_size: int, band_table: str, bar: tqdm) -> int:
    """Sign key ranges in worker processes (spawned: no connection is shared across a fork)."""
    ctx = mp.get_context("spawn")
    with ctx.Manager() as manager, ProcessPoolExecutor(len(ranges), mp_context=ctx) as pool:
        progress = manager.Queue()
        futures = [pool.submit(_worker, (dsn, coll_id, source, params, lo, hi, chunk_size, band_table), progress)
                   for lo, hi in ranges]
        while not all(f.done() for f in futures):
            try:
                bar.update(progress.get(timeout=0.2))
            except queue.Empty:
                pass
        while not progress.empty():
            bar.update(progress.get())
        return sum(f.result() for f in futures)


def default_workers(rows: int) -> int:
    """One worker per core, but no more than one per 25,000 rows (a process costs ~1 s to start)."""
    return max(1, min(os.cpu_count() or 1, rows // 25_000))


def index(table: str, key: str, text: list[str] | tuple[str, ...], *, name: str | None = None,
          schema: str | None = None, params: Params | None = None, reindex: bool = False,
          dsn: str | None = None, chunk_size: int = DEFAULT_CHUNK, progress: bool | None = None,
          workers: int | None = 1) -> IndexResult:
    """Index ``table`` into collection ``name`` (default: the table name); see the module docstring.

    ``workers`` processes each sign one key range (None: ``default_workers``, as the CLI does);
    results do not depend on it. Worker processes are spawned, so a script that asks for more
    than one must call this under ``if __name__ == "__main__":``. ``progress`` None shows a
    progress bar when stderr is a terminal.
    """
    params = params or Params()
    dsn = resolve_dsn(dsn)
    started, t0 = datetime.now(timezone.utc), time.perf_counter()
    with connect(dsn, autocommit=True) as writer:
        source = resolve_source(writer, table, key, text, schema)  # before any schema change
        migrate(dsn)
        name = name or source.table
        with writer.transaction():
            coll = collections.ensure(writer, name, source, params, reindex)
        locked = writer.execute("SELECT pg_try_advisory_lock(%s, %s)", (_LOCK_CLASS, coll.id)).fetchone()[0]
        if not locked:
            raise PgdedupError(f"another `pgdedup index` of collection {name!r} is running")
        removed = _remove_vanished(writer, source, coll.id)
        source_rows, null_keys = writer.execute(
            sql.SQL("SELECT count(*) FILTER (WHERE {k} IS NOT NULL), count(*) FILTER (WHERE {k} IS NULL) FROM {t}")
            .format(k=sql.Identifier(source.key), t=source.table_sql)).fetchone()
        show = sys.stderr.isatty() if progress is None else progress
        total = source_rows if coll.rows_indexed == 0 else None
        ranges = _key_ranges(writer, source, workers if workers is not None else default_workers(source_rows))
        # a first load stages its band keys and moves them in one sorted insert at the end;
        # a crashed run's staged keys are moved first, so a rerun sees everything committed
        writer.execute("SELECT pgdedup.flush_band_keys(%s)", (coll.id,))
        bands = "pgdedup.band_keys_staged" if coll.rows_indexed == 0 else "pgdedup.band_keys"
        with tqdm(total=total, unit="rows", desc=f"indexing {name}", disable=not show, file=sys.stderr) as bar:
            if len(ranges) == 1:
                signed = _sign_range(dsn, coll.id, source, coll.params, None, None, chunk_size, bands, bar.update)
            else:
                signed = _sign_parallel(dsn, coll.id, source, coll.params, ranges, chunk_size, bands, bar)
        writer.execute("SELECT pgdedup.flush_band_keys(%s)", (coll.id,))
        seconds = time.perf_counter() - t0
        result = IndexResult(name, source_rows, signed, removed, seconds, coll.params, null_keys)
        result.stats = {"source_rows": source_rows, "signed": signed, "removed": removed,
                        "null_keys": null_keys, "seconds": round(seconds, 3)}
        with writer.transaction():
            writer.execute(
                "UPDATE pgdedup.collections SET rows_indexed = (SELECT count(*) FROM pgdedup.signatures "
                "WHERE collection_id = %s), indexed_at = now() WHERE collection_id = %s", (coll.id, coll.id))
            writer.execute("INSERT INTO pgdedup.runs (collection_id, kind, started_at, stats) VALUES (%s, 'index', %s, %s)",
                           (coll.id, started, Jsonb(result.stats)))
        writer.execute("SELECT pg_advisory_unlock(%s, %s)", (_LOCK_CLASS, coll.id))
    return result
