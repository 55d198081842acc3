"""``pgdedup.collection(name, db)``: a handle on one collection for an application's hot path.

It loads the collection's settings once and keeps one connection (the caller's, or its own), so
checking a new item costs one round trip and no reconnect:

    coll = pgdedup.collection("feed_items", session_connection)
    if not coll.check(item.title + "\\n" + item.content):   # near-duplicates, most similar first
        session.add(item); session.flush()
        coll.add(item.feed_item_id)                          # signed in the same transaction

``add`` signs rows inside the caller's transaction: committed with the item, rolled back with
it, and visible to a second ``check`` in the same transaction. It takes the collection's lock in
shared mode, so any number of application transactions add at once while index and dedupe
runs (which take it exclusively) wait for none of them to finish: if one runs, ``add`` leaves
the rows to the tracking queue (tracked collection) or raises ``CollectionBusy``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from types import TracebackType
from typing import Any, TypeVar

import psycopg

from . import tracking
from .collections import Collection, get
from .connection import Db, end_read, idle_connection, session
from .db import guard_source
from .dedupe import DedupeResult, dedupe
from .explain import Explanation, explain
from .lifecycle import unmark
from .errors import translated
from .loader import write_chunk
from .queries import NOT_GIVEN, Partition, pairs, similar, similar_to_text, status
from .schema import COLLECTION_LOCK
from .tracking import track

T = TypeVar("T")


class CollectionHandle:
    """One collection, its settings loaded once, on one connection. Use ``pgdedup.collection``."""

    def __init__(self, name: str, db: Db = None) -> None:
        self._stack = ExitStack()
        idle = idle_connection(db)  # (then the settings' read is not left open in a transaction)
        try:
            with translated(), ExitStack() as setup:  # closed here unless the connection is our own
                opened = setup.enter_context(session(db, f"pgdedup app {name}"))
                #: the connection every call works on: the caller's (never committed here), or our own
                self._conn, self._owned = opened.conn, opened.owned
                #: what each call works on: our own connection, or the caller's as the caller gave it
                #: (a SQLAlchemy Connection stays one, so each call can begin its transaction)
                self._db: Db = self._conn if self._owned else db
                self.settings: Collection = get(self._conn, name)
                self._done()
                if self._owned:
                    self._stack = setup.pop_all()
        finally:
            if idle:  # the caller's search_path is back (each call pins it again); the read ends
                end_read(db)
        self.name = name

    @contextmanager
    def _call(self) -> Iterator[psycopg.Connection]:
        """The connection for one call: our own as it is (pinned when it was opened), or the
        caller's with pgdedup's search_path for the duration of the call only."""
        if self._owned:
            yield self._conn
            return
        with session(self._db) as s:
            yield s.conn

    def _done(self) -> None:
        """End the call's work: commit pgdedup's own connection; a caller's is the caller's."""
        if self._owned:
            self._conn.commit()

    def check(self, text: str, *, threshold: float | None = None, limit: int = 10,
              partition: Partition = NOT_GIVEN) -> list[tuple[str, float]]:
        """Keys of stored rows similar to ``text`` (by estimate, at the collection's threshold
        unless given), most similar first, as (key, similarity). A partitioned collection looks
        in ``partition`` only (None: the rows whose partition column is NULL).

        Raises:
            InvalidArgument: a threshold outside (0, 1], a limit below 1, a partition missing
                (partitioned collection) or given (one that is not).
        """
        with translated(), self._call() as conn:
            found = similar_to_text(conn, self.settings, text, threshold, limit, partition)
        self._done()
        return found

    def add(self, key: object) -> int:
        """``add_rows([key])``."""
        return self.add_rows([key])

    def add_rows(self, keys: Iterable[object]) -> int:
        """Sign the rows with these keys (as the source table has them now, in this transaction)
        and store them; a key the table does not have is forgotten. Returns the rows signed: 0
        when an index or dedupe run holds the collection and the tracking queue has the rows.

        Raises:
            CollectionBusy: an index or dedupe run holds an untracked collection.
        """
        wanted = sorted({str(k) for k in keys})
        coll = self.settings
        with translated(), self._call() as conn, conn.transaction():
            if not conn.execute("SELECT pg_try_advisory_xact_lock_shared(%s, %s)",
                                (COLLECTION_LOCK, coll.id)).fetchone()[0]:
                if coll.tracked:
                    return 0
                conn.execute("SELECT pgdedup.lock_collection(%s)", (coll.id,))  # raises, naming the holder
            guard_source(conn, coll.source, coll.name)  # the rows are read next
            seqs = [r[0] for r in conn.execute(
                "SELECT seq FROM pgdedup.queue WHERE collection_id = %s AND row_key = ANY(%s)", (coll.id, wanted))]
            signed, _, _ = tracking.sign_keys(
                conn, coll.id, coll.source, wanted,
                lambda rows: write_chunk(conn, coll.id, rows, coll.params, "band_keys", conn.info.backend_pid,
                                         coll.source.partition is not None))
            tracking.consume(conn, seqs)
            # exact pairs describe the rows as they were: drop them rather than serve them stale
            conn.execute("DELETE FROM pgdedup.results WHERE collection_id = %s AND target = 'exact'", (coll.id,))
        self._done()
        return signed

    # The commands, on this handle's connection: each is the free function of the same name
    # (``pgdedup.dedupe`` ...) run on it, so there is one implementation of each. On the caller's
    # connection they run inside the caller's transaction; on the handle's own, each commits.

    def dedupe(self, **options: Any) -> DedupeResult:
        """``pgdedup.dedupe(name, **options)`` on this connection (the marking column must exist)."""
        return self._command(dedupe, **options)

    def similar(self, **options: Any) -> list[tuple[str, float]]:
        """``pgdedup.similar(name, **options)`` on this connection."""
        return self._command(similar, **options)

    def pairs(self, **options: Any) -> list[tuple[str, str, float]]:
        """``pgdedup.pairs(name, **options)`` on this connection, as a list."""
        return self._command(lambda name, dsn, **o: list(pairs(name, dsn=dsn, **o)), **options)

    def explain(self, key_a: object, key_b: object, max_bucket: int | None = None) -> Explanation:
        """``pgdedup.explain(name, key_a, key_b, max_bucket=max_bucket)`` on this connection."""
        return self._command(lambda name, dsn: explain(name, str(key_a), str(key_b), max_bucket=max_bucket, dsn=dsn))

    def status(self) -> dict[str, Any]:
        """``pgdedup.status(name)`` on this connection: the collection's one row."""
        return self._command(lambda name, dsn: status(name, dsn=dsn)[0])

    def track(self, on: bool = True) -> bool:
        """``pgdedup.track(name, on=on)`` on this connection."""
        return self._command(track, on=on)

    def unmark(self) -> int:
        """``pgdedup.unmark(name)`` on this connection."""
        return self._command(unmark)

    def _command(self, command: Callable[..., T], **options: Any) -> T:
        result = command(self.name, dsn=self._db, **options)
        self._done()
        return result

    def close(self) -> None:
        """Close pgdedup's own connection (a caller's connection is left as it is: the session
        around it only restored its search_path)."""
        self._stack.close()

    def __enter__(self) -> "CollectionHandle":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def collection(name: str, db: Db = None) -> CollectionHandle:
    """A ``CollectionHandle`` on collection ``name`` over ``db`` (anything ``dsn`` takes elsewhere).

    Raises:
        CollectionNotFound: no such collection.
    """
    return CollectionHandle(name, db)
