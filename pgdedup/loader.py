"""``pgdedup index``: stream a table's text out, sign it in chunks, COPY signatures and band keys in.

Incremental by design: the server computes an md5 of every row's raw text and compares it with
the stored one, so unchanged rows are skipped without their text ever leaving the server; new
and changed rows are (re-)signed; rows gone from the source lose their signatures and band keys.
Each chunk is one transaction, so a crash loses at most the chunk in flight and a rerun resumes
where the last run stopped. Source rows are only ever read.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone

import numpy as np
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb
from tqdm import tqdm

from . import collections, copybin
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


def _text_sql(source: Source) -> sql.Composed:
    """The row's text: its text columns joined by a newline, NULL columns skipped (as in Python)."""
    return sql.SQL("concat_ws(E'\\n', {})").format(
        sql.SQL(", ").join(sql.SQL("s.{}::text").format(sql.Identifier(c)) for c in source.text_columns))


def _stream_query(source: Source, collection_id: int) -> sql.Composed:
    """New and changed rows (key, existing row id, md5, text columns), in key order."""
    key = sql.Identifier(source.key)
    md5 = sql.SQL("md5({})::uuid").format(_text_sql(source))
    return sql.SQL(
        "SELECT s.{key}::text, g.row_id, {md5}, {cols} FROM {table} s "
        "LEFT JOIN pgdedup.signatures g ON g.collection_id = {cid} AND g.row_key = s.{key}::text "
        "WHERE s.{key} IS NOT NULL AND (g.row_id IS NULL OR g.source_md5 <> {md5}) ORDER BY s.{key}"
    ).format(key=key, md5=md5, table=source.table_sql, cid=sql.Literal(collection_id),
             cols=sql.SQL(", ").join(sql.SQL("s.{}::text").format(sql.Identifier(c)) for c in source.text_columns))


def _remove_vanished(conn: psycopg.Connection, source: Source, collection_id: int) -> int:
    """Forget rows whose key is no longer in the source table."""
    ids = sql.SQL(
        "SELECT pgdedup.forget_rows({cid}, ARRAY(SELECT g.row_id FROM pgdedup.signatures g "
        "WHERE g.collection_id = {cid} AND NOT EXISTS (SELECT 1 FROM {table} s WHERE s.{key}::text = g.row_key)))"
    ).format(cid=sql.Literal(collection_id), table=source.table_sql, key=sql.Identifier(source.key))
    return int(conn.execute(ids).fetchone()[0])


def _write_chunk(conn: psycopg.Connection, collection_id: int, rows: list[tuple], params: Params) -> None:
    """Sign one chunk and store it in one transaction (old versions of changed rows replaced)."""
    texts = ["\n".join(c for c in r[3:] if c is not None) for r in rows]
    signed = sign_texts(texts, params)
    existing = [r[1] for r in rows if r[1] is not None]
    with conn.transaction():
        if existing:
            conn.execute("SELECT pgdedup.forget_rows(%s, %s)", (collection_id, existing))
        fresh = iter(r[0] for r in conn.execute("SELECT pgdedup.new_row_ids(%s)", (len(rows) - len(existing),)))
        row_ids = np.array([r[1] if r[1] is not None else next(fresh) for r in rows], dtype=np.int64)
        stream = copybin.signatures(collection_id, [r[0] for r in rows], row_ids, [r[2] for r in rows],
                                    signed.text_hashes, signed.feature_counts, signed.signatures, signed.buckets)
        with conn.cursor().copy(
                "COPY pgdedup.signatures (collection_id, row_id, source_md5, text_hash, feature_count, "
                "signature, buckets, row_key) FROM STDIN (FORMAT BINARY)") as copy:
            copy.write(stream)
        keep = signed.feature_counts > 0
        with conn.cursor().copy(
                "COPY pgdedup.band_keys (collection_id, band, bucket, row_id) FROM STDIN (FORMAT BINARY)") as copy:
            copy.write(copybin.band_keys(collection_id, row_ids[keep], signed.buckets[keep]))


def index(table: str, key: str, text: list[str] | tuple[str, ...], *, name: str | None = None,
          schema: str | None = None, params: Params | None = None, reindex: bool = False,
          dsn: str | None = None, chunk_size: int = DEFAULT_CHUNK, progress: bool | None = None) -> IndexResult:
    """Index ``table`` into collection ``name`` (default: the table name); see the module docstring.

    ``progress`` None shows a progress bar when stderr is a terminal.
    """
    params = params or Params()
    dsn = resolve_dsn(dsn)
    started, t0 = datetime.now(timezone.utc), time.perf_counter()
    with connect(dsn, autocommit=True) as writer, connect(dsn) as reader:
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
        signed = 0
        show = sys.stderr.isatty() if progress is None else progress
        total = source_rows if coll.rows_indexed == 0 else None
        with reader.cursor(name="pgdedup_index") as cur, \
                tqdm(total=total, unit="rows", desc=f"indexing {name}", disable=not show, file=sys.stderr) as bar:
            cur.itersize = chunk_size
            cur.execute(_stream_query(source, coll.id))
            while rows := cur.fetchmany(chunk_size):
                try:
                    _write_chunk(writer, coll.id, rows, coll.params)
                except psycopg.errors.UniqueViolation as exc:
                    raise PgdedupError(f"key column {source.key!r} of {source.label} is not unique "
                                       f"({exc.diag.message_detail or 'duplicate key'})") from exc
                signed += len(rows)
                bar.update(len(rows))
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
