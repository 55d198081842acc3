"""Exact verification: re-check candidate pairs with exact Jaccard from the source text.

MinHash estimates carry noise (standard error √(J(1−J)/k), 0.035 at J = 0.8, k = 128), so a
pair just above the threshold may be estimated below it and one below it above. With
``verify="exact"``, every candidate whose estimate clears a looser bar (``check_floors``:
threshold minus three standard errors, or the low end of auto's band if lower) is re-read from
the source table in batches, re-shingled with the collection's own feature settings, and kept
only if its exact Jaccard reaches the threshold. Precision against the feature definition is
then 1.0 (features are compared as 64-bit shingle hashes; two distinct shingles share one with
probability 2**-64).

With ``verify="auto"`` only the ambiguous candidates are re-read: those whose estimate lies in
the band where it could be on the wrong side of the threshold (``pgdedup.auto_bands``: a pair
exactly at the threshold lands above the band, or one at it below the band, with probability
at most 1e-3; a pair in which a text has fewer features than positions, whose estimate
spreads wider, is ambiguous from a lower estimate up and never accepted on it). Their exact Jaccard
is stored per pair of texts (``pgdedup.checked``) and reused by later runs; the estimate
decides every other candidate.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import ExitStack
from itertools import islice

import numpy as np
import psycopg
from psycopg import sql

from .collections import Collection
from .copybin import copy_into
from .db import beside_the_run, connect
from .errors import PgdedupError, StaleResults
from .features import features
from .hashing import partition_salts
from .normalise import normalise
from .signer import text_hashes
from .progress import Bar
from .workers import die_with_parent, starting

BATCH = 5000


def check_floors(conn: psycopg.Connection, threshold: float, num_perm: int) -> tuple[float, float]:
    """The estimates a candidate needs to be re-checked: for a pair of two texts of at least
    ``num_perm`` features each, three standard errors below ``threshold``, or the low end of
    auto's ambiguous band where that is lower (it is, by a little, for most thresholds: at 0.8
    and 128 positions 0.6875 against 0.694); for a pair in which a text has fewer features, the
    low end of auto's band for such pairs (``pgdedup.auto_bands``' small_lo, 0.5625 at 0.8).
    So every pair auto decides by its exact Jaccard is checked by exact too."""
    normal = max(threshold - 3 * math.sqrt(threshold * (1 - threshold) / num_perm), 0.01)
    return conn.execute("SELECT least(%s, b.lo), least(%s, b.small_lo) FROM pgdedup.auto_bands(%s, %s) b",
                        (normal, normal, threshold, num_perm)).fetchone()


def _signed_texts(conn: psycopg.Connection, coll: Collection, by: str, ids: list[int],
                  unchanged: bool = False) -> dict[int, str]:
    """The normalised text of one row for each of the given ``row_id``s or ``text_hash``es
    (``by``), if that row's text is still the one that was signed: its normalised text (and
    partition value) still hash to the stored text hash, so its feature set is the one the
    signature was made from. The row read is the first (by row id) of each id; with
    ``unchanged``, the first whose source text the server finds unchanged since it was signed
    (its md5), so that a text whose first row changed is read from another copy without sending
    every copy. An id without such a row is missing from the result.

    Comparing hashes here, on the text normalised anyway, costs ~1 us a text, where the server's
    md5 of each row cost ~12 us (measured on 20,000 texts of ~3 KB)."""
    src = coll.source
    # one look-up per id: its rows in row id order, the first whose source row is found (and
    # unchanged) read. Sorting every row of the batch with its text instead (DISTINCT ON)
    # spilled ~17 MB to disk per 5,000 texts and read the text of every copy. The source is
    # read by its own LATERAL ... OFFSET 0, a look-up by key per row: joined, the planner may
    # hash the whole source for each id (with the md5 test in the hash key, if the key has no
    # index: an md5 of every source row per id)
    rows = conn.execute(sql.SQL(
        "SELECT i.id, t.text_hash, t.text, t.part FROM unnest(%s::bigint[]) i(id) "
        "CROSS JOIN LATERAL (SELECT g.text_hash, x.text, x.part FROM pgdedup.signatures g "
        "CROSS JOIN LATERAL (SELECT {text} AS text, {part} AS part FROM {table} s "
        "WHERE s.{key} = g.row_key::{cast}{unchanged} OFFSET 0) x "
        "WHERE g.collection_id = %s AND g.{by} = i.id ORDER BY g.row_id LIMIT 1) t").format(
            by=sql.Identifier(by), text=src.text_sql, part=src.partition_sql, table=src.table_sql,
            key=sql.Identifier(src.key), cast=src.key_cast,
            unchanged=sql.SQL(" AND {} = g.source_md5").format(src.md5_sql) if unchanged else sql.SQL("")),
        (ids, coll.id)).fetchall()
    normalised = [normalise(r[2]) for r in rows]
    salts = partition_salts([r[3] for r in rows]) if src.partition is not None else None
    return {i: text for (i, stored, _, _), text, now in zip(rows, normalised, text_hashes(normalised, salts).tolist())
            if now == stored}


def _feature_sets(conn: psycopg.Connection, coll: Collection, by: str, ids: list[int]) -> dict[int, np.ndarray]:
    """Sorted distinct shingle hashes, re-read from the source table, of the rows with the given
    ``row_id``s or of the texts with the given ``text_hash``es (``by``), each from a row whose
    text is still the one that was signed (``_signed_texts``: the first row of a text, or, if
    that one changed, a copy the server finds unchanged); an id without such a row is missing
    from the result."""
    texts = _signed_texts(conn, coll, by, ids)
    if by == "text_hash" and len(texts) < len(ids):
        texts |= _signed_texts(conn, coll, by, [i for i in ids if i not in texts], unchanged=True)
    sets = features(list(texts.values()), coll.params.spec, coll.params.seed).distinct()
    return {i: sets.hashes[sets.offsets[n]:sets.offsets[n + 1]] for n, i in enumerate(texts)}


def _stale(coll: Collection) -> StaleResults:
    """What a check meets when the source text of a row differs from what was signed."""
    return StaleResults(f"collection {coll.name!r}: rows changed in {coll.source.label} after they were signed; "
                        f"run `pgdedup index {coll.name}`"
                        + (" (with --full if nothing is queued: a write the tracking triggers did not see)"
                           if coll.tracked else "") + ", then dedupe again")


def common(a: np.ndarray, b: np.ndarray) -> int:
    """How many values two sorted distinct arrays share: each value of the shorter one is looked
    up in the longer one by binary search (faster than ``np.intersect1d``, which sorts both again)."""
    if len(a) > len(b):
        a, b = b, a
    if not len(a):
        return 0
    return int(np.count_nonzero(b.take(np.searchsorted(b, a), mode="clip") == a))


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Exact Jaccard of two sorted distinct arrays (0 when either is empty)."""
    if not len(a) or not len(b):
        return 0.0
    shared = common(a, b)
    return shared / (len(a) + len(b) - shared)


def _check_batch(conn: psycopg.Connection, coll: Collection, by: str,
                 batch: list[tuple[int, int]]) -> list[tuple[int, int, float]] | None:
    """Exact Jaccard of each pair in ``batch``, pairs of row ids or of text hashes (``by``, as
    ``_feature_sets``); None when one of them has no row left whose source text is the one signed."""
    sets = _feature_sets(conn, coll, by, sorted({t for pair in batch for t in pair}))
    if any(a not in sets or b not in sets for a, b in batch):
        return None
    return [(a, b, jaccard(sets[a], sets[b])) for a, b in batch]


def _jaccards(conn: psycopg.Connection, coll: Collection, cur: psycopg.Cursor) -> Iterator[list[tuple[int, int, float]]]:
    """Batches of (row_a, row_b, exact Jaccard) for the row-id pairs ``cur`` returns, ``BATCH``
    pairs at a time: texts are re-read per batch, so memory is bounded by the batch.

    Raises:
        StaleResults: a row's source text is no longer the one signed.
    """
    while batch := list(islice(cur, BATCH)):
        checked = _check_batch(conn, coll, "row_id", batch)
        if checked is None:
            raise _stale(coll)
        yield checked


def verify_exact(conn: psycopg.Connection, coll: Collection, threshold: float | None = None,
                 max_bucket: int = 100, *, ranked: bool = False, keep_order: str | None = None,
                 progress: bool = False) -> tuple[int, int]:
    """Fill ``pgdedup.exact_pairs`` for ``coll``; returns (pairs checked, pairs kept).

    The candidates are exactly those the estimate path would see: with ``ranked`` (dedupe) a
    capped bucket's leaders are its earliest rows in ``keep_order``, the rows dedupe keeps;
    without (pairs) they are its lowest row ids. ``pgdedup.results`` records the index version
    and parameters, so SQL that reads the pairs later can refuse them once they are stale.
    Runs in the caller's transaction (which should hold the collection's lock). ``progress``
    shows a counter of the pairs checked on stderr.

    Raises:
        StaleResults: a candidate's row changed or vanished in the source table after it was
            signed (``pgdedup index`` has not seen the change yet).
    """
    t = coll.params.threshold if threshold is None else threshold
    order = (conn.execute("SELECT pgdedup.rank_rows(%s, %s)", (coll.id, keep_order)).fetchone()[0]
             if ranked else None)
    conn.execute("DELETE FROM pgdedup.exact_pairs WHERE collection_id = %s", (coll.id,))
    checked = kept = 0
    with conn.cursor(name="pgdedup_exact") as cur, \
            Bar(unit="pairs", desc=f"checking {coll.name} exactly", disable=not progress, file=sys.stderr) as bar:
        floor, small_floor = check_floors(conn, t, coll.params.num_perm)
        cur.execute("SELECT row_a, row_b FROM pgdedup.estimated_pairs(%s, %s, %s) "
                    "WHERE estimate >= CASE WHEN fewest < %s THEN %s ELSE %s END ORDER BY row_a",
                    (coll.id, max_bucket, ranked, coll.params.num_perm, small_floor, floor))
        for batch in _jaccards(conn, coll, cur):
            bar.update(len(batch))
            good = [(coll.id, a, b, j) for a, b, j in batch if j >= t]
            with copy_into(conn, "exact_pairs", ("collection_id", "row_a", "row_b", "similarity"),
                           binary=False) as copy:
                for row in good:
                    copy.write_row(row)
            checked += len(batch)
            kept += len(good)
    conn.execute("SELECT pgdedup.record_result(%s, 'exact', %s, %s, %s, %s, 'exact')",
                 (coll.id, t, max_bucket, ranked, order))
    return checked, kept


def check_ambiguous(conn: psycopg.Connection, coll: Collection, threshold: float | None = None,
                    max_bucket: int = 100) -> int:
    """For ``pairs(verify="auto")``: ``store_checks`` of every candidate pair whose estimate is in
    the ambiguous band (``pgdedup.auto_bands``) and has no exact check yet; returns how many.
    (``dedupe`` gets its pairs to check from ``pgdedup.update_duplicates`` instead.)"""
    t = coll.params.threshold if threshold is None else threshold
    return store_checks(conn, coll, sql.SQL("SELECT row_a, row_b, text_a, text_b FROM pgdedup.unchecked_pairs({}, {}, {}, false)")
                        .format(sql.Literal(coll.id), sql.Literal(t), sql.Literal(max_bucket)))


def _components(pairs: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """The pairs grouped by connected component of the graph they form over texts (union-find),
    components in order of their smallest pair, pairs sorted within each: batches made of whole
    components read and shingle each text once, where batches of sorted pairs re-read a text
    for every batch that meets it."""
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[tuple[int, int]]] = {}
    for pair in sorted(pairs):
        groups.setdefault(root(pair[0]), []).append(pair)
    return list(groups.values())


def _batches(pairs: list[tuple[int, int]], texts: int = BATCH) -> Iterator[list[tuple[int, int]]]:
    """Pairs in batches of whole components holding at most about ``texts`` texts; a component
    larger than that is cut into runs of ``texts`` pairs (its texts then read once per run)."""
    batch: list[tuple[int, int]] = []
    seen: set[int] = set()
    for group in _components(pairs):
        members = {t for pair in group for t in pair}
        if batch and len(seen) + len(members) > texts:
            yield batch
            batch, seen = [], set()
        if len(members) > texts:
            for i in range(0, len(group), texts):
                yield group[i:i + texts]
            continue
        batch += group
        seen |= members
    if batch:
        yield batch


#: Exact checks go to worker processes when there are at least this many batches of texts:
#: a process costs about a second to start.
PARALLEL_BATCHES = 3

_checker: tuple[psycopg.Connection, Collection] | None = None  # a checker process's own


def _start_checker(dsn: str, coll: Collection, parent: int) -> None:
    """Entry point of a checker process: its own connection, dying with its parent."""
    global _checker
    die_with_parent(parent)
    _checker = connect(dsn, autocommit=True, application_name=f"pgdedup dedupe {coll.name} (checks)"), coll


def _check_in_checker(batch: list[tuple[int, int]]) -> list[tuple[int, int, float]] | None:
    assert _checker is not None, "called in a process started by _start_checker"
    conn, coll = _checker
    with beside_the_run(conn, coll.source):
        return _check_batch(conn, coll, "text_hash", batch)


def store_checks(conn: psycopg.Connection, coll: Collection, pairs: sql.Composable, dsn: str | None = None,
                 progress: bool = False) -> int:
    """Store in ``pgdedup.checked`` the exact Jaccard of the pairs of texts that query ``pairs``
    returns as (row_a, row_b, text_a, text_b), text_a < text_b (each pair of texts once);
    returns how many. A check belongs to the two texts, so it is made from the text as it was
    signed: from a row whose text is still the one signed (``_signed_texts``). It stays valid
    while the collection keeps its settings, so later runs check only pairs they have not seen. Runs in
    the caller's transaction (which should hold the collection's lock).

    The pairs (two integers each) are held in memory and grouped by connected component, so
    that each text is read from the source table and shingled once (``_batches``). Given the
    ``dsn`` of ``conn`` and at least ``PARALLEL_BATCHES`` batches, one worker process per core
    reads and shingles batches on connections of its own (committed rows: the caller's
    transaction has not written the source rows or signatures it reads) while this one stores
    the results. ``progress`` shows a counter of the pairs checked on stderr (gone when done).

    Raises:
        StaleResults: every row of one of the texts changed in the source table after it was
            signed (``pgdedup index`` has not seen the change yet).
        PgdedupError: a worker process died.
    """
    todo = conn.execute(sql.SQL("SELECT DISTINCT text_a, text_b FROM ({}) p").format(pairs)).fetchall()
    batches = list(_batches(todo, BATCH))
    processes = min(os.cpu_count() or 1, len(batches))
    with ExitStack() as stack:
        if dsn is not None and processes > 1 and len(batches) >= PARALLEL_BATCHES:
            with starting() as ctx:  # (a forking pool starts its processes at the first submit)
                pool = ProcessPoolExecutor(processes, ctx, _start_checker, (dsn, coll, os.getpid()))
                stack.callback(pool.shutdown, wait=True, cancel_futures=True)  # on an error: no batch left running
                results: Iterator[list[tuple[int, int, float]] | None] = pool.map(_check_in_checker, batches)
        else:
            results = (_check_batch(conn, coll, "text_hash", batch) for batch in batches)
        bar = stack.enter_context(Bar(total=len(todo), unit="pairs", desc=f"checking {coll.name} exactly",
                                       disable=not (progress and todo), file=sys.stderr, leave=False))
        try:
            for checked in results:
                if checked is None:
                    raise _stale(coll)
                bar.update(len(checked))
                with copy_into(conn, "checked", ("collection_id", "text_a", "text_b", "similarity"),
                               binary=False) as copy:
                    for a, b, similarity in checked:
                        copy.write_row((coll.id, a, b, similarity))
        except BrokenProcessPool:
            raise PgdedupError("an exact-check worker process died") from None
    return len(todo)
