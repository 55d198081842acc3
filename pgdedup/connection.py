"""The one place that turns what a caller has into the connection pgdedup works on.

A caller may hand over a libpq DSN or URI, a SQLAlchemy URL string (any driver), a SQLAlchemy
``Engine``, a psycopg ``Connection``, or a SQLAlchemy ``Connection`` (psycopg driver). For the
first three pgdedup opens (and commits, and closes) a connection of its own. For a connection,
it works **inside the caller's transaction and never commits it**: what it writes becomes
visible, or vanishes, with the caller's own commit or rollback, and its locks last as long.
A connection in autocommit mode outside a transaction block has no transaction of the caller's
to work in: each call then runs in one transaction of its own on it (committed when the call
returns, rolled back when it raises), so that its locks span its statements and it is all or
nothing, as on pgdedup's own connection.
Operations that must commit as they go (``index``, which commits every chunk, ``watch``) refuse
a caller's connection with ``InvalidArgument``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any, Union

import psycopg
from psycopg import sql

from .db import SAFE_SEARCH_PATH, connect, put_back_setting, resolve_dsn, swap_setting
from .errors import InvalidArgument

#: What the API accepts wherever it says ``dsn``.
Db = Union[str, None, psycopg.Connection, Any]  # Any: a SQLAlchemy Engine or Connection


@dataclass
class Session:
    """A connection to work on, and whether pgdedup owns it (may commit it)."""

    conn: psycopg.Connection
    owned: bool
    #: the DSN the connection was opened with when pgdedup owns it (more connections may be
    #: opened on it, e.g. by worker processes); None on a caller's connection
    dsn: str | None = None

    def commit(self) -> None:
        """Commit pgdedup's own connection; on a caller's, leave the transaction to the caller."""
        if self.owned:
            self.conn.commit()


def own_dsn(db: Db, operation: str) -> str | None:
    """The DSN of a ``db`` pgdedup may open connections of its own on (a string or an Engine).

    Raises:
        InvalidArgument: ``db`` is a connection, which ``operation`` cannot work inside.
    """
    if db is None or isinstance(db, str):
        return db
    engine_url = _engine_url(db)
    if engine_url is not None:
        return engine_url
    raise InvalidArgument(f"{operation} commits as it goes, so it cannot run inside your transaction: "
                          "give it a DSN, URL or Engine instead of a connection")


@contextmanager
def session(db: Db, application_name: str | None = None, *, autocommit: bool = False) -> Iterator[Session]:
    """A ``Session`` on ``db`` (see the module docstring), with pgdedup's pinned search_path.

    On a caller's connection the call runs in a savepoint of the caller's transaction (or in a
    transaction of its own on an autocommit connection outside one), so a call that fails has
    written nothing and leaves the caller's transaction usable; the search_path is pinned for
    the call, local to the transaction, and put back as it was, the caller's own ``SET LOCAL``
    included. The caller's other settings are left alone. A SQLAlchemy ``Connection`` that has
    not begun a transaction is begun first (as SQLAlchemy would on its first statement), so
    that its ``commit()`` commits what pgdedup wrote.

    Raises:
        InvalidArgument: a SQLAlchemy connection that does not use the psycopg (3) driver, or
            something that is not a connection at all.
        PgdedupError: the server cannot be reached.
    """
    dsn = db if db is None or isinstance(db, str) else _engine_url(db)
    if dsn is not None or db is None:
        kwargs: dict[str, object] = {"autocommit": autocommit}
        if application_name:
            kwargs["application_name"] = application_name
        with connect(dsn, **kwargs) as conn:
            yield Session(conn, owned=True, dsn=resolve_dsn(dsn))
        return
    conn = _psycopg_connection(db)
    _begin_sqlalchemy(db, conn)
    if conn.autocommit and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
        # the call's own transaction (alone, each statement would commit, releasing the collection's
        # lock between them); its local pin ends with it
        with conn.transaction():
            conn.execute(swap_setting("search_path", SAFE_SEARCH_PATH))
            yield Session(conn, owned=False)
        return
    # one round trip in, one out (a handle's check on the caller's connection: three in all); the
    # pin inside the savepoint, so that a call failing from its first statement on is rolled back
    # (on a connection not in autocommit mode, psycopg begins the caller's transaction first)
    old = _in_one_round_trip(conn, sql.SQL("SAVEPOINT pgdedup_call"),
                             swap_setting("search_path", SAFE_SEARCH_PATH)).fetchone()[0]
    try:
        yield Session(conn, owned=False)
    except BaseException:
        with suppress(psycopg.Error):  # (a broken connection: the error that broke it is the one to see)
            _in_one_round_trip(conn, sql.SQL("ROLLBACK TO SAVEPOINT pgdedup_call"),
                               sql.SQL("RELEASE SAVEPOINT pgdedup_call"))  # the pin with the rest
        raise
    _in_one_round_trip(conn, put_back_setting("search_path", old), sql.SQL("RELEASE SAVEPOINT pgdedup_call"))


def _in_one_round_trip(conn: psycopg.Connection, *statements: sql.Composable) -> psycopg.Cursor:
    """Run ``statements`` in order, in one round trip, and return the cursor of the last one: as one
    query of several statements, or, in pipeline mode (which refuses those, and batches anyway),
    one after another."""
    if conn.pgconn.pipeline_status != psycopg.pq.PipelineStatus.OFF:
        return [conn.execute(statement) for statement in statements][-1]
    cursor = conn.execute(sql.SQL("; ").join(statements))
    while cursor.nextset():
        pass
    return cursor


def idle_connection(db: Db) -> bool:
    """Whether ``db`` is a caller's connection with no transaction open that a call would begin
    (not in autocommit mode: there a call makes and ends a transaction of its own)."""
    if db is None or isinstance(db, str) or _engine_url(db) is not None:
        return False
    conn = _psycopg_connection(db)
    if conn.autocommit:
        return False
    return not db.in_transaction() if db is not conn else conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def end_read(db: Db) -> None:
    """Roll back the transaction a read-only call began on an ``idle_connection``, leaving it as
    the caller had it (a SQLAlchemy Connection not begun, so its own ``begin()`` works)."""
    conn = _psycopg_connection(db)
    (db if db is not conn else conn).rollback()


def _begin_sqlalchemy(db: Any, conn: psycopg.Connection) -> None:
    """Begin a SQLAlchemy ``Connection``'s transaction when it has none: pgdedup's statements go
    to its DBAPI connection, past SQLAlchemy, which would otherwise not know a transaction is
    open, and its ``commit()`` would commit nothing (the pool's reset then rolls it back)."""
    if db is not conn and not conn.autocommit and not db.in_transaction():
        db.begin()


def _engine_url(db: Any) -> str | None:
    """The URL of a SQLAlchemy Engine (password included), or None for anything else."""
    url = getattr(db, "url", None)
    if url is not None and hasattr(db, "raw_connection") and hasattr(url, "render_as_string"):
        return url.render_as_string(hide_password=False)
    return None


def _psycopg_connection(db: Any) -> psycopg.Connection:
    if isinstance(db, psycopg.Connection):
        return db
    fairy = getattr(db, "connection", None)  # a SQLAlchemy Connection's DBAPI connection
    driver = getattr(fairy, "driver_connection", None)
    if isinstance(driver, psycopg.Connection):
        return driver
    if fairy is not None:
        raise InvalidArgument("pgdedup works inside a SQLAlchemy transaction only with the psycopg (3) driver "
                              "(postgresql+psycopg://); give it the Engine instead to let it connect itself")
    raise InvalidArgument(f"not a DSN, URL, Engine or connection: {type(db).__name__}")
