"""Exact verification: re-check candidate pairs with exact Jaccard from the source text.

MinHash estimates carry noise (standard error √(J(1−J)/k), 0.035 at J = 0.8, k = 128), so a
pair just above the threshold may be estimated below it and one below it above. With
``verify="exact"``, every candidate whose estimate clears a looser bar (threshold minus three
standard errors) is re-read from the source table in batches, re-shingled with the
collection's own feature settings, and kept only if its exact Jaccard reaches the threshold.
Precision against the feature definition is then 1.0 (features are compared as 64-bit shingle
hashes; two distinct shingles share one with probability 2**-64).
"""

from __future__ import annotations

import math
from itertools import islice

import numpy as np
import psycopg
from psycopg import sql

from .collections import Collection
from .copybin import copy_into
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


def verify_exact(conn: psycopg.Connection, coll: Collection, threshold: float | None = None,
                 max_bucket: int = 100, *, ranked: bool = False, keep_order: str | None = None) -> tuple[int, int]:
    """Fill ``pgdedup.exact_pairs`` for ``coll``; returns (pairs checked, pairs kept).

    The candidates are exactly those the estimate path would see: with ``ranked`` (dedupe) a
    capped bucket's leaders are its earliest rows in ``keep_order``, the rows dedupe keeps;
    without (pairs) they are its lowest row ids. ``pgdedup.results`` records the index version
    and parameters, so SQL that reads the pairs later can refuse them once they are stale.
    Runs in the caller's transaction (which should hold the collection's lock); texts are read
    in batches of ``BATCH`` pairs, so memory is bounded by the batch, not by the table.
    """
    t = coll.params.threshold if threshold is None else threshold
    order = (conn.execute("SELECT pgdedup.rank_rows(%s, %s)", (coll.id, keep_order)).fetchone()[0]
             if ranked else None)
    conn.execute("DELETE FROM pgdedup.exact_pairs WHERE collection_id = %s", (coll.id,))
    checked = kept = 0
    with conn.cursor(name="pgdedup_exact") as cur:
        cur.execute("SELECT row_a, row_b FROM pgdedup.verified_pairs(%s, %s, %s, %s) ORDER BY row_a",
                    (coll.id, loose_threshold(t, coll.params.num_perm), max_bucket, ranked))
        while batch := list(islice(cur, BATCH)):
            sets = _feature_sets(conn, coll, sorted({i for pair in batch for i in pair}))
            good = [(coll.id, a, b, j) for a, b in batch
                    if (j := jaccard(sets.get(a, np.empty(0)), sets.get(b, np.empty(0)))) >= t]
            with copy_into(conn, "exact_pairs", ("collection_id", "row_a", "row_b", "similarity"),
                           binary=False) as copy:
                for row in good:
                    copy.write_row(row)
            checked += len(batch)
            kept += len(good)
    conn.execute("SELECT pgdedup.record_result(%s, 'exact', %s, %s, %s, %s, 'exact')",
                 (coll.id, t, max_bucket, ranked, order))
    return checked, kept
