"""Named collections: a source table, its columns and the parameters its signatures were made with."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg
from psycopg import sql

from . import schema
from .db import Source, check_source
from .errors import CollectionNotFound, InvalidArgument, UnsafeOperation
from .params import Params

_COLUMNS = ("collection_id, name, source_schema, source_table, key_column, key_type, text_columns, "
            "unit, ngram, num_perm, bands, rows_per_band, seed, threshold, band_threshold, algorithm, rows_indexed, indexed_at, "
            "tracked, partition_by")


@dataclass(frozen=True)
class Collection:
    id: int
    name: str
    source: Source
    params: Params
    rows_indexed: int
    indexed_at: datetime | None
    tracked: bool = False  # triggers queue the keys writers touch (see ``tracking``)


def _from_row(row: tuple) -> Collection:
    (cid, name, nsp, rel, key, key_type, text_cols, unit, ngram, k, b, r, seed, threshold, band_threshold,
     algorithm, rows_indexed, indexed_at, tracked, partition_by) = row
    params = Params(threshold=threshold, band_threshold=band_threshold, num_perm=k, unit=unit, ngram=ngram,
                    seed=seed, bands=b, rows=r, algorithm=algorithm)
    return Collection(cid, name, Source(nsp, rel, key, key_type, tuple(text_cols), partition_by), params,
                      rows_indexed, indexed_at, tracked)


def find(conn: psycopg.Connection, name: str) -> Collection | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM pgdedup.collections WHERE name = %s", (name,)).fetchone()
    return _from_row(row) if row else None


def get(conn: psycopg.Connection, name: str, *, need_source: bool = False) -> Collection:
    """The collection called ``name``; with ``need_source``, only while its source table exists
    (commands that read or mark the source need it; status, similar and drop do not).

    Raises:
        CollectionNotFound: no such collection (the message names those that exist), or no
            pgdedup schema in the database at all.
        SchemaMismatch: the schema is at another revision than this pgdedup's.
        SourceMissing: ``need_source`` and the source table (or one of its columns) was renamed
            or dropped.
        UnsafeOperation: ``need_source`` and reading the source could run another role's code
            with this one's rights (``db.check_source``).
    """
    if schema.check_revision(conn) is None:
        raise CollectionNotFound(f"no collection named {name!r} (no pgdedup schema in this database yet; "
                                 "run `pgdedup index` first)")
    found = find(conn, name)
    if found is None:
        names = [r[0] for r in conn.execute("SELECT name FROM pgdedup.collections ORDER BY name")]
        known = ", ".join(names) if names else "none yet; run `pgdedup index` first"
        raise CollectionNotFound(f"no collection named {name!r} (collections: {known})")
    if need_source:
        check_source(conn, found.source, name)
    return found


def all_collections(conn: psycopg.Connection) -> list[Collection]:
    return [_from_row(r) for r in conn.execute(f"SELECT {_COLUMNS} FROM pgdedup.collections ORDER BY name")]


def _source_differences(old: Source, new: Source) -> list[str]:
    fields = ("schema", "table", "key", "key_type", "text_columns", "partition")
    return [f"{f}: stored {getattr(old, f)!r}, requested {getattr(new, f)!r}"
            for f in fields if getattr(old, f) != getattr(new, f)]


def _values(source: Source, params: Params) -> tuple:
    return (source.schema, source.table, source.key, source.key_type, list(source.text_columns), source.partition,
            params.unit, params.ngram, params.num_perm, params.bands, params.rows, params.seed,
            params.threshold, params.band_threshold, params.algorithm)


@dataclass
class StoredResult:
    """A collection's stored dedupe result (``pgdedup.results``): its target and the settings it
    was decided with, which a dedupe's arguments may have set apart from the collection's."""

    target: str
    threshold: float
    verify: str
    max_bucket: int


def stored_result(conn: psycopg.Connection, collection_id: int) -> StoredResult | None:
    """The result the collection's marks come from: in place (``column``) first, else the view's;
    None before any dedupe. (``exact`` results are pairs, not marks.)"""
    row = conn.execute("SELECT target, threshold, verify, max_bucket FROM pgdedup.results "
                       "WHERE collection_id = %s AND target <> 'exact' ORDER BY target = 'column' DESC LIMIT 1",
                       (collection_id,)).fetchone()
    return StoredResult(*row) if row else None


def find_or_create(conn: psycopg.Connection, name: str, source: Source, params: Params) -> Collection:
    """The collection called ``name``, created with ``source`` and ``params`` if it does not exist.

    Creating writes nothing but this one row (two concurrent first runs create it once); the
    caller takes the collection's lock next and only then checks or changes anything.
    """
    existing = find(conn, name)  # no INSERT for an existing row: it would wait for a run updating it
    if existing is not None:
        return existing
    conn.execute(
        """INSERT INTO pgdedup.collections (name, source_schema, source_table, key_column, key_type,
               text_columns, partition_by, unit, ngram, num_perm, bands, rows_per_band, seed, threshold,
               band_threshold, algorithm)
           VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
           ON CONFLICT (name) DO NOTHING""", (name, *_values(source, params)))
    return get(conn, name)


def settle(conn: psycopg.Connection, existing: Collection, source: Source, params: Params,
           reindex: bool) -> Collection:
    """Check the stored settings match; ``reindex`` wipes and re-parameterises the collection (even
    when nothing changed: it is how a user asks for a rebuild from scratch). Call it holding the
    collection's lock, in a transaction.

    Mixing signatures made with different parameters would make every comparison meaningless,
    so a mismatch is refused unless the caller asks for a re-index. A re-index also drops the
    results computed from the old signatures (``pgdedup.duplicates``, ``pgdedup.exact_pairs``,
    ``pgdedup.results``).

    Raises:
        InvalidArgument: the settings differ and ``reindex`` is false.
        UnsafeOperation: a re-index onto another table while the old one holds the marks.
    """
    differences = _source_differences(existing.source, source) + existing.params.differences(params)
    if not reindex:
        if not differences:
            return existing
    if existing.tracked and _source_differences(existing.source, source):
        raise InvalidArgument(f"collection {existing.name!r} tracks {existing.source.label}; stop that first "
                              f"(`pgdedup track {existing.name} --off`)")
    if not reindex:
        raise InvalidArgument(f"collection {existing.name!r} was indexed with other settings "
                              f"({'; '.join(differences)}); rerun with --reindex to rebuild it")
    moved = (existing.source.schema, existing.source.table) != (source.schema, source.table)
    if moved:
        _refuse_marks_left_behind(conn, existing)
    for table in ("band_keys", "band_keys_staged", "signatures", "duplicates", "exact_pairs", "results", "changes",
                  "checked"):
        conn.execute(sql.SQL("DELETE FROM pgdedup.{} WHERE collection_id = %s").format(sql.Identifier(table)),
                     (existing.id,))
    conn.execute(
        """UPDATE pgdedup.collections SET source_schema = %s, source_table = %s, key_column = %s,
               key_type = %s, text_columns = %s, partition_by = %s, unit = %s, ngram = %s, num_perm = %s, bands = %s,
               rows_per_band = %s, seed = %s, threshold = %s, band_threshold = %s, algorithm = %s, rows_indexed = 0,
               indexed_at = NULL, index_version = index_version + 1
           WHERE collection_id = %s""", (*_values(source, params), existing.id))
    if moved:  # another table's column, if any, is vetted like any new one by the next dedupe
        conn.execute("UPDATE pgdedup.collections SET mark_column = NULL, mark_relid = NULL, mark_attnum = NULL "
                     "WHERE collection_id = %s AND mark_relid IS DISTINCT FROM pgdedup.relation_of(%s, %s)",
                     (existing.id, source.schema, source.table))  # (the same table renamed keeps its column)
    return get(conn, existing.name)


def _refuse_marks_left_behind(conn: psycopg.Connection, existing: Collection) -> None:
    """Refuse to move a collection to another table while the table it leaves holds its marks:
    no command could reach them afterwards (``unmark`` clears the collection's current table).

    Raises:
        UnsafeOperation: the old table still exists, is a table, and its marking column holds
            marks; or reading it could run another role's code (``db.check_source``).
    """
    column = conn.execute("SELECT mark_column FROM pgdedup.collections WHERE collection_id = %s",
                          (existing.id,)).fetchone()[0]
    old = existing.source
    if column is None or not conn.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid "
            "WHERE c.oid = pgdedup.relation_of(%s, %s) AND c.relkind IN ('r', 'p') AND a.attname = %s "
            "AND NOT a.attisdropped)", (old.schema, old.table, column)).fetchone()[0]:
        return
    # the old table is read: checked as unmark checks it (the collection still records it), locked
    conn.execute("SELECT pgdedup.guard_collection_source(%s, %s, false)", (existing.name, column))
    if conn.execute(sql.SQL("SELECT EXISTS (SELECT 1 FROM {} WHERE {} IS NOT NULL)").format(
            old.table_sql, sql.Identifier(column))).fetchone()[0]:
        raise UnsafeOperation(f"collection {existing.name!r} has marks in {old.label}.{column}: clear them first "
                              f"(`pgdedup unmark {existing.name}`), then index the other table")
