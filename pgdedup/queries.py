"""Ad-hoc questions over an indexed collection: all pairs, rows like this one, status.

Each is a thin call of a SQL function or view in the ``pgdedup`` schema (sql/0002), so what
the CLI prints is what the same query in psql returns.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from . import schema, statistics
import psycopg
from psycopg.rows import dict_row

from .collections import Collection, get
from .connection import Db, session
from .db import guard_source
from .errors import InvalidArgument, translated
from .exact import check_ambiguous, verify_exact
from .progress import Progress
from .signer import sign_texts


def pairs(name: str, *, threshold: float | None = None, verify: str = "estimate", max_bucket: int = 100,
          dsn: Db = None, progress: bool | None = None) -> Iterator[tuple[str, str, float]]:
    """Every pair of rows (key_a, key_b, similarity) at or above the threshold, streamed from
    pgdedup's own connection. On a caller's connection they are all read before the first is
    returned, so that between two pairs the connection is the caller's: its search_path, its
    transaction (a loop left early rolls nothing back).

    ``verify="exact"`` re-checks candidates against the source text; similarities are then exact
    (that writes ``pgdedup.exact_pairs``, so it takes the collection's lock). ``verify="auto"``
    re-checks only the candidates whose estimate is too close to the threshold to decide
    (stored in ``pgdedup.checked``; it takes the lock too); the others keep their estimate. A bucket with more
    than ``max_bucket`` distinct texts pairs each of them only with its first ``max_bucket``.
    ``progress`` (None: when stderr is a terminal) reports the exact checks and the end on stderr.

    Raises:
        CollectionNotFound, InvalidArgument, CollectionBusy (see ``dedupe``).
        SourceMissing: ``verify="exact"`` and the source table was renamed or dropped.
    """
    with translated(), session(dsn, f"pgdedup pairs {name}") as s:
        conn = s.conn
        coll = get(conn, name, need_source=verify == "exact")
        conn.execute("SELECT pgdedup.check_args(%s, %s, %s)", (threshold, max_bucket, verify))
        shown = Progress(f"pairs {name}", progress)
        statistics.refresh(conn, coll.id, shown)
        s.commit()
        if verify != "estimate":
            conn.execute("SELECT pgdedup.lock_collection(%s)", (coll.id,))
            guard_source(conn, coll.source, name)  # the checks re-read the source
            with shown.stage(f"candidates checked exactly ({verify})"):
                (verify_exact if verify == "exact" else check_ambiguous)(conn, coll, threshold, max_bucket)
        query = "SELECT key_a, key_b, similarity FROM pgdedup.pairs(%s, %s, %s, %s)"
        args = (name, threshold, verify, max_bucket)
        if s.owned:
            with conn.cursor(name="pgdedup_pairs") as cur, shown.stage("every pair found and sent"):
                cur.execute(query, args)
                yield from cur
            return
        with shown.stage("every pair found and sent"):  # all of them before the first (see above)
            found = conn.execute(query, args).fetchall()
    yield from found


class _NotGiven:
    """The type of ``NOT_GIVEN``."""

    def __repr__(self) -> str:
        return "NOT_GIVEN"


#: "No partition given" (None is a partition value: the rows whose partition column is NULL).
NOT_GIVEN = _NotGiven()

Partition = str | None | _NotGiven


def similar(name: str, *, key: str | None = None, text: str | None = None, threshold: float | None = None,
            limit: int = 10, partition: Partition = NOT_GIVEN, dsn: Db = None) -> list[tuple[str, float]]:
    """Rows of collection ``name`` similar to the row with ``key`` (within its partition), or to
    ``text`` signed with the collection's own parameters (in ``partition``, which a partitioned
    collection needs); most similar first.

    Raises:
        InvalidArgument: not exactly one of key and text; a partition missing or not applicable.
        CollectionNotFound, RowNotFound: no such collection, or no row with that key.
    """
    if (key is None) == (text is None):
        raise InvalidArgument("give exactly one of key or text")
    with translated(), session(dsn) as s:
        conn = s.conn
        coll = get(conn, name)
        if key is not None:
            if partition is not NOT_GIVEN:
                raise InvalidArgument("a row is compared within its own partition: give a partition only with a text")
            return conn.execute("SELECT * FROM pgdedup.similar(%s, %s, %s, %s)",
                                (name, str(key), threshold, limit)).fetchall()
        return similar_to_text(conn, coll, text, threshold, limit, partition)


def similar_to_text(conn: psycopg.Connection, coll: Collection, text: str, threshold: float | None,
                    limit: int, partition: Partition = NOT_GIVEN) -> list[tuple[str, float]]:
    """Rows of ``coll`` similar to ``text`` signed with the collection's own parameters (and
    salted with ``partition`` when the collection is partitioned), most similar first (an empty
    text matches nothing). One round trip: the hot path of ``check``.

    Raises:
        InvalidArgument: a partitioned collection and no partition, or a partition for one that is not.
    """
    by = coll.source.partition
    if by is not None and isinstance(partition, _NotGiven):
        raise InvalidArgument(f"collection {coll.name!r} is partitioned by {by!r}: give the partition to look in")
    if by is None and not isinstance(partition, _NotGiven):
        raise InvalidArgument(f"collection {coll.name!r} is not partitioned: give no partition")
    signed = sign_texts([text], coll.params, None if isinstance(partition, _NotGiven) else [partition])
    if signed.feature_counts[0] == 0:
        return []
    return conn.execute("SELECT * FROM pgdedup.similar_to(%s, %s, %s, %s, %s)",
                        (coll.name, signed.signature(0).tolist(), signed.buckets[0].tolist(), threshold,
                         limit)).fetchall()


def status(name: str | None = None, *, dsn: Db = None) -> list[dict[str, Any]]:
    """One dict per collection (or just ``name``): parameters, rows indexed, duplicates, last runs."""
    with translated(), session(dsn) as s:
        conn = s.conn
        if name:
            get(conn, name)  # a clear error for a missing collection, or no schema at all
        elif schema.check_revision(conn) is None:
            return []
        # dict_row names the columns when the rows arrive (cur.description is None until then
        # in pipeline mode)
        with conn.cursor(row_factory=dict_row) as cur:
            cur.execute("SELECT * FROM pgdedup.status WHERE %s::text IS NULL OR name = %s ORDER BY name", (name, name))
            return cur.fetchall()


def candidate_similarities(name: str, *, dsn: Db = None) -> list[float]:
    """Estimated similarity of every candidate pair of collection ``name`` (for ``tune``'s histogram)."""
    with translated(), session(dsn) as s:
        conn = s.conn
        coll = get(conn, name)
        return [r[0] for r in conn.execute("SELECT similarity FROM pgdedup.verified_pairs(%s, 0)", (coll.id,))]
