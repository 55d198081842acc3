"""Connections and names: where the DSN comes from, and how user-given names are resolved.

Every identifier that reaches SQL is quoted with ``psycopg.sql.Identifier``; names are looked up
in the catalog first, so a missing table or column is a clear error before anything is written.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

import psycopg
from psycopg import sql

from .errors import CollectionBusy, ConnectionFailed, InvalidArgument, PgdedupError, UnsafeOperation, translated

#: The search_path of every pgdedup session: no object of another schema can stand in for a
#: built-in function or operator, and pgdedup's own objects are always schema-qualified.
SAFE_SEARCH_PATH = "pg_catalog, pg_temp"
#: How often the server checks that the client is still there during a long query, so the work
#: of a killed run stops instead of running on (PostgreSQL 14+).
CLIENT_CHECK_INTERVAL = "2s"

# The schemas a connection's user had on their search_path before pgdedup pinned its own:
# table names given without a schema are looked up there, as psql would.
_user_schemas: "weakref.WeakKeyDictionary[psycopg.Connection, list[str]]" = weakref.WeakKeyDictionary()


def swap_setting(name: str, value: str) -> sql.Composed:
    """One statement that returns setting ``name`` as it is (None where never defined) and sets
    it to ``value`` for the rest of the transaction (the CTE is read before set_config runs):
    pgdedup's settings on a caller's connection, put back with ``put_back_setting``."""
    return sql.SQL("WITH o AS MATERIALIZED (SELECT pg_catalog.current_setting({n}, true) AS old) "
                   "SELECT o.old, pg_catalog.set_config({n}, {v}, true) FROM o").format(n=sql.Literal(name),
                                                                                     v=sql.Literal(value))


def put_back_setting(name: str, old: str | None) -> sql.Composed:
    """The statement that gives setting ``name`` back the value ``swap_setting`` returned, for
    the rest of the transaction (the caller's session value comes back with its end)."""
    return sql.SQL("SELECT pg_catalog.set_config({}, {}, true)").format(sql.Literal(name), sql.Literal(old or ""))


def resolve_dsn(dsn: str | None = None) -> str:
    """``dsn`` if given, else ``DATABASE_URL``, else "" (libpq then reads the PG* environment).

    A SQLAlchemy URL (``postgresql+psycopg://…``, any driver) becomes the libpq URI it names.
    """
    dsn = dsn or os.environ.get("DATABASE_URL", "")
    scheme, sep, rest = dsn.partition("://")
    if sep and "+" in scheme and scheme.split("+", 1)[0] in ("postgresql", "postgres"):
        return f"postgresql://{rest}"
    return dsn


def connect(dsn: str | None = None, **kwargs: object) -> psycopg.Connection:
    """A psycopg connection with pgdedup's session settings (``pin_session``).

    Raises:
        ConnectionFailed: the server cannot be reached (one line, libpq's reason).
    """
    try:
        conn = psycopg.connect(resolve_dsn(dsn), **kwargs)  # type: ignore[arg-type]
    except psycopg.OperationalError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "connection failed"
        raise ConnectionFailed(f"cannot connect to PostgreSQL: {first}") from exc
    pin_session(conn)
    return conn


def pin_session(conn: psycopg.Connection) -> None:
    """Pin ``search_path`` to ``SAFE_SEARCH_PATH`` (remembering the user's schemas for name
    lookups), run transactions READ COMMITTED whatever the server's default (``check_source``
    refuses another role's tables in a transaction whose snapshot may be older than the lock)
    and let the server notice a vanished client during long queries.

    Why: pgdedup runs as owners and superusers; with the user's search_path, a function another
    role created in ``public`` could be picked instead of a built-in one and run with their rights.
    """
    _user_schemas[conn] = conn.execute("SELECT pg_catalog.current_schemas(false)").fetchone()[0]
    conn.execute("SELECT pg_catalog.set_config('search_path', %s, false)", (SAFE_SEARCH_PATH,))
    # the source checks read the catalogs through the snapshot: a fresh one per statement
    conn.execute("SELECT pg_catalog.set_config('default_transaction_isolation', 'read committed', false)")
    if conn.info.server_version >= 140000:
        conn.execute("SELECT pg_catalog.set_config('client_connection_check_interval', %s, false)",
                     (CLIENT_CHECK_INTERVAL,))
    if not conn.autocommit:
        conn.commit()


#: Key column types pgdedup accepts, by their ``regtype`` name.
KEY_TYPES = ("smallint", "integer", "bigint", "uuid", "text", "character varying")


@dataclass(frozen=True)
class Source:
    """A resolved source table: schema, table, key column (and its type), text columns, and the
    column whose values partition it (rows are compared only within a partition), if any."""

    schema: str
    table: str
    key: str
    key_type: str
    text_columns: tuple[str, ...]
    partition: str | None = None

    @property
    def table_sql(self) -> sql.Composed:
        return sql.SQL("{}.{}").format(sql.Identifier(self.schema), sql.Identifier(self.table))

    @property
    def label(self) -> str:
        return f"{self.schema}.{self.table}"

    @property
    def text_sql(self) -> sql.Composed:
        """A row's text over alias ``s``: its text columns joined by a newline, NULLs skipped
        (exactly what the Python side joins, so md5s and re-read texts agree)."""
        return sql.SQL("concat_ws(E'\\n', {})").format(
            sql.SQL(", ").join(sql.SQL("s.{}::text").format(sql.Identifier(c)) for c in self.text_columns))

    @property
    def partition_sql(self) -> sql.Composable:
        """A row's partition value as text over alias ``s`` (NULL when not partitioned)."""
        if self.partition is None:
            return sql.SQL("NULL::text")
        return sql.SQL("s.{}::text").format(sql.Identifier(self.partition))

    @property
    def md5_sql(self) -> sql.Composed:
        """The md5 a row's signature is stored with: of its text, and of its partition value when
        partitioned (a row moved to another partition is signed again). The value comes first,
        framed so that no (value, text) pair reads as another: 'N' for NULL, 'V' and the value
        when it has no newline (the newline after it ends it), else 'L', its length and the
        value (a value and text of 'a' and 'b\\nc' against 'a\\nb' and 'c'; values without a
        newline keep the md5s stored before 'L' existed)."""
        if self.partition is None:
            return sql.SQL("md5({})::uuid").format(self.text_sql)
        return sql.SQL(
            "md5(concat_ws(E'\\n', CASE WHEN {p} IS NULL THEN 'N' WHEN strpos({p}, E'\\n') = 0 THEN 'V' || {p} "
            "ELSE 'L' || length({p}) || ':' || {p} END, {t}))::uuid").format(p=self.partition_sql, t=self.text_sql)

    def rows_sql(self, collection_id: int, where: sql.Composable, first: sql.Composable = sql.SQL("")) -> sql.Composed:
        """``SELECT`` of the source rows matching ``where`` (over alias ``s``, with the stored
        signature as ``g``): ``first``, then (key, stored row id, md5, partition value, text
        columns...), the tuples ``loader.write_chunk`` signs."""
        key = sql.Identifier(self.key)
        return sql.SQL(
            "SELECT {first}s.{key}::text, g.row_id, {md5}, {part}, {cols} FROM {table} s "
            "LEFT JOIN pgdedup.signatures g ON g.collection_id = {cid} AND g.row_key = s.{key}::text WHERE {where}"
        ).format(first=first, key=key, md5=self.md5_sql, part=self.partition_sql, table=self.table_sql,
                 cid=sql.Literal(collection_id), where=where,
                 cols=sql.SQL(", ").join(sql.SQL("s.{}::text").format(sql.Identifier(c)) for c in self.text_columns))

    @property
    def key_cast(self) -> sql.SQL:
        """The key's type, to cast stored text keys back (so the source's own key index is usable).

        Raises:
            UnsafeOperation: the recorded type is not one of ``KEY_TYPES`` (a type name read from
                a table is never spliced into SQL unchecked).
        """
        if self.key_type not in KEY_TYPES:
            raise UnsafeOperation(f"unsupported key type {self.key_type!r} recorded for {self.label}")
        return sql.SQL(self.key_type)


def source_texts(conn: psycopg.Connection, source: Source, keys: list[str]) -> dict[str, str]:
    """The text (``Source.text_sql``) of the source rows with these keys (as stored: text), by key;
    a key the table does not have is absent. Read by the table's own key index."""
    return dict(conn.execute(sql.SQL(
        "SELECT s.{key}::text, {text} FROM {table} s WHERE s.{key} = ANY(%s::{cast}[])"
    ).format(key=sql.Identifier(source.key), text=source.text_sql, table=source.table_sql, cast=source.key_cast),
        (keys,)).fetchall())


def find_table(conn: psycopg.Connection, table: str, schema: str | None = None) -> tuple[str, str]:
    """(schema, table) of a table given literally, or as ``schema.table`` / quoted SQL syntax.

    The literal name is tried first, so a table called ``a.b`` or ``x"; drop table y; --``
    is found as itself; otherwise ``table`` is parsed as a (possibly quoted) qualified name.
    """
    path = _user_schemas.get(conn) or conn.execute("SELECT pg_catalog.current_schemas(false)").fetchone()[0]
    candidates = [(schema, table)]
    if schema is None:
        try:
            parts = conn.execute("SELECT parse_ident(%s)", (table,)).fetchone()[0]
        except psycopg.errors.InvalidParameterValue:
            conn.rollback()
            parts = []
        if len(parts) == 2:
            candidates.append((parts[0], parts[1]))
        elif len(parts) == 1 and parts[0] != table:
            candidates.append((None, parts[0]))
    for nsp, rel in candidates:
        row = conn.execute(
            """SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE c.relname = %s AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
                 AND (n.nspname = %s OR (%s::text IS NULL AND n.nspname = ANY (%s)))
               ORDER BY array_position(%s, n.nspname::text) LIMIT 1""",
            (rel, nsp, nsp, path, path),
        ).fetchone()
        if row:
            return row[0], row[1]
    raise PgdedupError(f"table {table!r} does not exist" + (f" in schema {schema!r}" if schema else ""))


def table_columns(conn: psycopg.Connection, schema: str, table: str) -> dict[str, str]:
    """Column name → regtype name, in column order."""
    rows = conn.execute(
        """SELECT a.attname, a.atttypid::regtype::text FROM pg_attribute a
           WHERE a.attrelid = (quote_ident(%s) || '.' || quote_ident(%s))::regclass
             AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum""",
        (schema, table),
    ).fetchall()
    return dict(rows)


def check_source(conn: psycopg.Connection, source: Source, collection: str | None = None) -> str:
    """Refuse to read a source whose reading could run code that another role controls, with
    the rights of the role running pgdedup (often a superuser). Checked on every run, not only
    the first: the table's owner may change it in between. The checks are the SQL function
    ``pgdedup.check_source`` (sql/0024_source_check.sql), which the SQL functions that read a
    source make too:

    - A text or partition column is read as ``col::text``: a cast from a type its owner made
      (a composite, an enum, a domain over one) runs that owner's function. So every such
      column's type (a domain: every type under it too) must be owned by a superuser (the
      built-in types, those of extensions) or by the current role.
    - A view runs the functions and operators it calls (and those of the views it reads) with the
      reader's rights: each must be owned by a superuser or the current role, and so must the
      views. So must the functions and operators of the indexes, extended statistics and CHECK
      constraints of the source (and of what it reads, partitions included): the planner may
      evaluate them while planning any read.
    - Row-level security policies that apply to the current role would choose the rows read
      (pgdedup's results stand for every row) and run their expressions with its rights.
    - The key must still have the type it was indexed with (one of ``KEY_TYPES``): stored keys
      are cast back to it.
    - In a transaction other than READ COMMITTED, every relation read must belong to a
      superuser or the current role: the catalogs are read through the transaction's snapshot.

    ``collection`` (the name of the collection whose source this is) goes into the messages.
    Returns the source's ``relkind`` (``r`` a table, ``p`` a partitioned one, ``v`` a view, ...).

    Raises:
        SourceMissing: the table or a column is gone.
        UnsafeOperation: any of the above, or a recorded key type outside ``KEY_TYPES``.
    """
    return _source_call(conn, "check_source", source, collection)


def guard_source(conn: psycopg.Connection, source: Source, collection: str | None = None) -> str:
    """``check_source`` under the source's ACCESS SHARE lock (``pgdedup.guard_source``), taken
    first in ``conn``'s current transaction and held to its end: ALTER TABLE then waits for that
    transaction. Without the lock, an owner's ALTER committed between the check and a later read
    would have that read run the owner's code (a change not yet committed at the check is waited
    for by the lock and then seen). CREATE INDEX, CREATE STATISTICS and ATTACH PARTITION do not
    wait for it: an index run also holds them off (``hold_source``). Every transaction that
    reads the source calls it, or runs while one that did is open (a whole ``index`` run keeps
    one on a connection of its own). A materialized view or a
    foreign table cannot be locked (LOCK TABLE refuses them): one another non-superuser role
    owns is refused, any other is checked without a lock. Returns the source's ``relkind``, as
    ``check_source``.

    Raises:
        SourceMissing, UnsafeOperation: as ``check_source``.
    """
    return _source_call(conn, "guard_source", source, collection)


#: How long a helper session of a run (an index worker, an exact-check process) waits for a lock
#: on the source before it gives way (``beside_the_run``).
BESIDE_LOCK_TIMEOUT = "2s"


@contextmanager
def beside_the_run(conn: psycopg.Connection, source: Source) -> Iterator[None]:
    """Read ``source`` on ``conn``, a helper session of a run whose own session already holds the
    table (index workers, exact-check processes), giving way to anyone waiting for the table.

    Such a read never has to wait for the table: the run holds it, so nothing that conflicts can
    hold it too. If it waits, someone is waiting for a stronger lock (an application's ALTER
    TABLE, VACUUM FULL, TRUNCATE), queued behind the run and ahead of the read: the read waits
    for it, it waits for the run, and the run waits for the read in Python, where PostgreSQL's
    deadlock detector cannot see it. Everything then hangs, and every query of the table queues
    behind the waiting DDL (found by test: an ALTER during a dedupe's exact checks). So the read
    gives up after ``BESIDE_LOCK_TIMEOUT``, and the run stops and lets the DDL through. The same
    holds for the run's main session when it reads the source on another connection than the
    one holding the table (the index run's writer). The session's own setting is given back after
    the body (inside a transaction the change is local to it).

    Raises:
        CollectionBusy: the read gave way (the message says why and what to do).
    """
    local = conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
    before = conn.execute("SELECT pg_catalog.current_setting('lock_timeout')").fetchone()[0]
    conn.execute("SELECT pg_catalog.set_config('lock_timeout', %s, %s)", (BESIDE_LOCK_TIMEOUT, local))
    try:
        yield
        conn.execute("SELECT pg_catalog.set_config('lock_timeout', %s, %s)", (before, local))
    except psycopg.errors.LockNotAvailable:
        raise CollectionBusy(f"another session is waiting to change {source.label} (ALTER TABLE, VACUUM FULL, "
                             "TRUNCATE, ...): this run held the table and stopped rather than hold it up; run "
                             "again once it is done") from None


def hold_source(conn: psycopg.Connection, source: Source) -> None:
    """Hold, to the end of ``conn``'s transaction, every table of ``source``'s read set (what a
    view reads, partitions, children) that another role owns, against its owner adding an index,
    extended statistics or a partition whose functions the planner would run with this role's
    rights (``pgdedup.hold_source``, revision 30: SHARE UPDATE EXCLUSIVE; reads and writes of the
    table go on). Taken by an index run on its source-lock connection, before the source is
    checked there (so an index committed while it waited is seen by the check), and only there:
    that connection writes nothing and holds nothing else. Held by a transaction that writes the
    table, or next to one that holds the table on another connection, it could deadlock with an
    application's own (revision 28's lesson).

    Raises:
        UnsafeOperation: the role may not take that lock on such a table (it needs UPDATE, DELETE
            or TRUNCATE on it).
    """
    with translated():
        conn.execute("SELECT pgdedup.hold_source(%s, %s)", (source.schema, source.table))


def _source_call(conn: psycopg.Connection, function: str, source: Source, collection: str | None) -> str:
    """``pgdedup.<function>`` (check_source or guard_source) on ``source``; its errors as
    pgdedup's exceptions (PD006: UnsafeOperation, PD007: SourceMissing). Inside an open
    transaction (a caller's, often) it runs in a savepoint, so a refusal leaves the transaction
    usable; a lock it took stays with the transaction."""
    columns = [*source.text_columns, *([source.partition] if source.partition else [])]
    query = sql.SQL("SELECT pgdedup.{}(%s, %s, %s, %s, %s, %s)").format(sql.Identifier(function))
    args = (source.schema, source.table, source.key, source.key_type, columns, collection)
    inside = conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
    with translated(), (conn.transaction() if inside else nullcontext()):
        return conn.execute(query, args).fetchone()[0]


def resolve_source(conn: psycopg.Connection, table: str, key: str, text_columns: list[str] | tuple[str, ...],
                   schema: str | None = None, partition_by: str | None = None) -> Source:
    """Check that the table and columns exist, the key type is supported, no text column is
    bytea and the database's encoding is known. A text column of another type (jsonb, integer,
    an enum, …) is read as its text form (``col::text``). Whether reading it is safe is
    ``check_source``'s to say (``guard_source``, before the first read).

    Raises:
        PgdedupError: a missing table or column.
        InvalidArgument: an unsupported key type, a bytea text column, a SQL_ASCII database.
    """
    if not text_columns:
        raise PgdedupError("at least one text column is needed (--text COLUMN)")
    if conn.info.parameter_status("server_encoding") == "SQL_ASCII":
        raise InvalidArgument("databases with encoding SQL_ASCII are not supported: their text has no known "
                              "encoding to normalise (use UTF8)")
    nsp, rel = find_table(conn, table, schema)
    columns = table_columns(conn, nsp, rel)
    available = ", ".join(columns)
    for col in [key, *text_columns, *([partition_by] if partition_by is not None else [])]:
        if col not in columns:
            raise PgdedupError(f"column {col!r} does not exist in table {nsp}.{rel} (columns: {available})")
    key_type = columns[key]
    if key_type not in KEY_TYPES:
        raise InvalidArgument(f"key column {key!r} has type {key_type}; supported: {', '.join(KEY_TYPES)}")
    for col in text_columns:
        if columns[col] == "bytea":
            raise InvalidArgument(f"text column {col!r} is bytea, whose text form is hex, not its words; index a "
                                  f"view that decodes it, e.g. convert_from({col}, 'UTF8')")
    if partition_by is not None and partition_by in (key, *text_columns):
        raise InvalidArgument(f"the partition column {partition_by!r} is the key or a text column: partition by "
                              "a column of its own (a tenant, a feed)")
    return Source(nsp, rel, key, key_type, tuple(text_columns), partition_by)
