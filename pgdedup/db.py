"""Connections and names: where the DSN comes from, and how user-given names are resolved.

Every identifier that reaches SQL is quoted with ``psycopg.sql.Identifier``; names are looked up
in the catalog first, so a missing table or column is a clear error before anything is written.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import psycopg
from psycopg import sql


class PgdedupError(Exception):
    """An error with a one-line message meant for the user (the CLI prints it and exits 1)."""


def resolve_dsn(dsn: str | None = None) -> str:
    """``dsn`` if given, else ``DATABASE_URL``, else "" (libpq then reads the PG* environment)."""
    if dsn:
        return dsn
    return os.environ.get("DATABASE_URL", "")


def connect(dsn: str | None = None, **kwargs: object) -> psycopg.Connection:
    """A psycopg connection; connection failures become a one-line ``PgdedupError``."""
    try:
        return psycopg.connect(resolve_dsn(dsn), **kwargs)  # type: ignore[arg-type]
    except psycopg.OperationalError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "connection failed"
        raise PgdedupError(f"cannot connect to PostgreSQL: {first}") from exc


#: Key column types pgdedup accepts, by their ``regtype`` name.
KEY_TYPES = ("smallint", "integer", "bigint", "uuid", "text", "character varying")


@dataclass(frozen=True)
class Source:
    """A resolved source table: schema, table, key column (and its type), text columns."""

    schema: str
    table: str
    key: str
    key_type: str
    text_columns: tuple[str, ...]

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
    def key_cast(self) -> sql.SQL:
        """The key's type, to cast stored text keys back (so the source's own key index is usable)."""
        assert self.key_type in KEY_TYPES
        return sql.SQL(self.key_type)


def find_table(conn: psycopg.Connection, table: str, schema: str | None = None) -> tuple[str, str]:
    """(schema, table) of a table given literally, or as ``schema.table`` / quoted SQL syntax.

    The literal name is tried first, so a table called ``a.b`` or ``x"; drop table y; --``
    is found as itself; otherwise ``table`` is parsed as a (possibly quoted) qualified name.
    """
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
                 AND (n.nspname = %s OR (%s::text IS NULL AND pg_table_is_visible(c.oid)))""",
            (rel, nsp, nsp),
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


def resolve_source(conn: psycopg.Connection, table: str, key: str, text_columns: list[str] | tuple[str, ...],
                   schema: str | None = None) -> Source:
    """Check that the table and columns exist and the key type is supported."""
    if not text_columns:
        raise PgdedupError("at least one text column is needed (--text COLUMN)")
    nsp, rel = find_table(conn, table, schema)
    columns = table_columns(conn, nsp, rel)
    available = ", ".join(columns)
    for col in [key, *text_columns]:
        if col not in columns:
            raise PgdedupError(f"column {col!r} does not exist in table {nsp}.{rel} (columns: {available})")
    key_type = columns[key]
    if key_type not in KEY_TYPES:
        raise PgdedupError(f"key column {key!r} has type {key_type}; supported: {', '.join(KEY_TYPES)}")
    return Source(nsp, rel, key, key_type, tuple(text_columns))
