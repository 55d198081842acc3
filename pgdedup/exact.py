"""Exact verification: re-check candidate pairs with exact Jaccard from the source text.

MinHash estimates carry noise (standard error √(J(1−J)/k), 0.035 at J = 0.8, k = 128), so a
pair just above the threshold may be estimated below it and one below it above. With
``verify="exact"``, every candidate whose estimate clears a looser bar (threshold minus three
standard errors) is re-read from the source table in batches, re-shingled with the
collection's own feature settings, and kept only if its exact Jaccard reaches the threshold.
Precision against the feature definition is then 1.0 (features are compared as 64-bit shingle
hashes; two distinct shingles share one with probability 2**-64).

With ``verify="auto"`` only the ambiguous candidates are re-read: those whose estimate lies in
the band where it could be on the wrong side of the threshold (``pgdedup.auto_band``: a pair
exactly at the threshold lands above the band, or one at it below the band, with probability
at most 1e-3). Their exact Jaccard is stored per pair of texts (``pgdedup.checked``) and reused
by later runs; the estimate decides every other candidate.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from itertools import islice

import numpy as np
import psycopg
from psycopg import sql
from tqdm import tqdm

from .collections import Collection
from .copybin import copy_into
from .errors import StaleResults
from .features import features
from .normalise import normalise

BATCH = 5000


def loose_threshold(threshold: float, num_perm: int) -> float:
    """The estimate a candidate needs to be re-checked: three standard errors below ``threshold``."""
    return max(threshold - 3 * math.sqrt(threshold * (1 - threshold) / num_perm), 0.01)


def _feature_sets(conn: psycopg.Connection, coll: Collection, row_ids: list[int]) -> dict[int, np.ndarray]:
    """Sorted distinct shingle hashes of the given rows, re-read from the source table."""
    src = coll.source
    rows = conn.execute(sql.SQL(
        "SELECT g.row_id, {text} FROM pgdedup.signatures g JOIN {table} s ON s.{key} = g.row_key::{cast} "
        "WHERE g.collection_id = {cid} AND g.row_id = ANY({ids})").format(
            text=src.text_sql, table=src.table_sql, key=sql.Identifier(src.key), cast=src.key_cast,
            cid=sql.Literal(coll.id), ids=sql.Literal(row_ids))).fetchall()
    feats = features([normalise(r[1]) for r in rows], coll.params.spec, coll.params.seed)
    return {r[0]: np.unique(feats.hashes[feats.offsets[i]:feats.offsets[i + 1]]) for i, r in enumerate(rows)}


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Exact Jaccard of two sorted distinct arrays (0 when either is empty)."""
    if not len(a) or not len(b):
        return 0.0
    common = len(np.intersect1d(a, b, assume_unique=True))
    return common / (len(a) + len(b) - common)


def _jaccards(conn: psycopg.Connection, coll: Collection, cur: psycopg.Cursor) -> Iterator[list[tuple[tuple, float]]]:
    """Batches of (row of ``cur``, exact Jaccard of its first two columns, row ids), ``BATCH``
    rows at a time: texts are re-read per batch, so memory is bounded by the batch."""
    while batch := list(islice(cur, BATCH)):
        sets = _feature_sets(conn, coll, sorted({i for row in batch for i in row[:2]}))
        yield [(row, jaccard(sets.get(row[0], np.empty(0)), sets.get(row[1], np.empty(0)))) for row in batch]


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
    """
    t = coll.params.threshold if threshold is None else threshold
    order = (conn.execute("SELECT pgdedup.rank_rows(%s, %s)", (coll.id, keep_order)).fetchone()[0]
             if ranked else None)
    conn.execute("DELETE FROM pgdedup.exact_pairs WHERE collection_id = %s", (coll.id,))
    checked = kept = 0
    with conn.cursor(name="pgdedup_exact") as cur, \
            tqdm(unit="pairs", desc=f"checking {coll.name} exactly", disable=not progress, file=sys.stderr) as bar:
        cur.execute("SELECT row_a, row_b FROM pgdedup.verified_pairs(%s, %s, %s, %s) ORDER BY row_a",
                    (coll.id, loose_threshold(t, coll.params.num_perm), max_bucket, ranked))
        for batch in _jaccards(conn, coll, cur):
            bar.update(len(batch))
            good = [(coll.id, a, b, j) for (a, b), j in batch if j >= t]
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
    the ambiguous band (``pgdedup.auto_band``) and has no exact check yet; returns how many.
    (``dedupe`` gets its pairs to check from ``pgdedup.update_duplicates`` instead.)"""
    t = coll.params.threshold if threshold is None else threshold
    return store_checks(conn, coll, sql.SQL("SELECT row_a, row_b, text_a, text_b FROM pgdedup.unchecked_pairs({}, {}, {}, false)")
                        .format(sql.Literal(coll.id), sql.Literal(t), sql.Literal(max_bucket)))


def _text_feature_sets(conn: psycopg.Connection, coll: Collection, text_hashes: list[int]) -> dict[int, np.ndarray]:
    """Sorted distinct shingle hashes of the given texts (by text hash), each re-read from a row
    whose source text is still the one that was signed (its md5 unchanged); a text none of whose
    rows is like that is missing from the result."""
    src = coll.source
    rows = conn.execute(sql.SQL(
        "SELECT DISTINCT ON (g.text_hash) g.text_hash, {text} FROM pgdedup.signatures g "
        "JOIN {table} s ON s.{key} = g.row_key::{cast} "
        "WHERE g.collection_id = %s AND g.text_hash = ANY(%s) AND g.source_md5 = {md5} "
        "ORDER BY g.text_hash, g.row_id").format(
            text=src.text_sql, table=src.table_sql, key=sql.Identifier(src.key), cast=src.key_cast,
            md5=src.md5_sql), (coll.id, text_hashes)).fetchall()
    feats = features([normalise(r[1]) for r in rows], coll.params.spec, coll.params.seed)
    return {r[0]: np.unique(feats.hashes[feats.offsets[i]:feats.offsets[i + 1]]) for i, r in enumerate(rows)}


def store_checks(conn: psycopg.Connection, coll: Collection, pairs: sql.Composable) -> int:
    """Store in ``pgdedup.checked`` the exact Jaccard of the pairs of texts that query ``pairs``
    returns as (row_a, row_b, text_a, text_b), text_a < text_b (each pair of texts once);
    returns how many. A check belongs to the two texts, so it is made from the text as it was
    signed: from a row whose source text is unchanged since. It stays valid while the
    collection keeps its settings, so later runs check only pairs they have not seen. Runs in
    the caller's transaction (which should hold the collection's lock).

    Raises:
        StaleResults: every row of one of the texts changed in the source table after it was
            signed (``pgdedup index`` has not seen the change yet).
    """
    checked = 0
    with conn.cursor(name="pgdedup_ambiguous") as cur:
        cur.execute(sql.SQL("SELECT DISTINCT ON (text_a, text_b) * FROM ({}) p ORDER BY text_a, text_b").format(pairs))
        while batch := list(islice(cur, BATCH)):
            sets = _text_feature_sets(conn, coll, sorted({h for row in batch for h in row[2:4]}))
            stale = [row for row in batch if row[2] not in sets or row[3] not in sets]
            if stale:
                raise StaleResults(f"collection {coll.name!r}: rows changed in {coll.source.label} after they were "
                                   f"signed; run `pgdedup index {coll.name}`, then dedupe again")
            with copy_into(conn, "checked", ("collection_id", "text_a", "text_b", "similarity"),
                           binary=False) as copy:
                for _, _, text_a, text_b in batch:
                    copy.write_row((coll.id, text_a, text_b, jaccard(sets[text_a], sets[text_b])))
            checked += len(batch)
    return checked
