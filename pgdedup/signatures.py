"""MinHash signatures by one-permutation hashing with optimal densification.

One-permutation hashing (Li, Owen & Zhang 2012) hashes each feature once: the top 32 bits of
its 64-bit hash pick one of k bins, the low 32 bits are its value, and each bin keeps the minimum
value. For two sets A and B, a bin that is non-empty for A ∪ B agrees with probability
J = |A ∩ B| / |A ∪ B|. Bins left empty (sets with fewer than ~k features) are filled by optimal
densification (Shrivastava 2017): empty bin i probes bins h(i, 1), h(i, 2), ... with a hash that
depends only on (i, attempt), and copies the first non-empty bin's value. Because the probe
sequence is the same for every set, the filled bin again agrees with probability J, so
``agreeing positions / k`` is an unbiased estimate of J for any set sizes. (For sets smaller
than k its variance is up to about twice the k-permutation J(1−J)/k, measured in the tests:
features sharing a bin hide one another.)

Cost is O(features + k) per document instead of O(features · k) for k-permutation MinHash,
which is why it is the default. Values are 32 bits (band buckets are made from them); PostgreSQL
stores the low 16 bits of each (copybin, sql/0023_sketches.sql): two different minima agree
there with probability 2**-16, far below the estimator's own noise.
An empty feature set has the empty signature, which is similar to nothing.
"""

from __future__ import annotations

import numpy as np

from .features import Features
from .hashing import seeded

_SHIFT32 = np.uint64(32)


def _bin_of(h: np.ndarray, k: int) -> np.ndarray:
    """Map 64-bit hashes to bins 0..k-1 by their top 32 bits (multiply-shift, no modulo bias)."""
    return ((h >> _SHIFT32) * np.uint64(k)) >> _SHIFT32


def signatures(feats: Features, num_perm: int, seed: int, value_bits: int = 32) -> np.ndarray:
    """(n, num_perm) signatures of a chunk, uint32 (uint64 when ``value_bits`` > 32, which only
    the benchmarks use to measure what 32 bits cost). Rows of empty feature sets are all zero;
    callers must treat them as empty (feature count 0), never compare them."""
    if not 16 <= value_bits <= 63:
        raise ValueError(f"value_bits must be between 16 and 63, not {value_bits}")
    empty = np.uint64(1 << value_bits)
    n = len(feats)
    h = seeded(feats.hashes, seed, salt=2)
    flat = np.full(n * num_perm, empty, dtype=np.uint64)
    np.minimum.at(flat, feats.doc_index() * num_perm + _bin_of(h, num_perm).astype(np.int64),
                  h & np.uint64((1 << value_bits) - 1))
    sig = flat.reshape(n, num_perm)
    _densify(sig, np.diff(feats.offsets) > 0, num_perm, seed, empty)
    sig[sig == empty] = 0
    return sig.astype(np.uint32 if value_bits <= 32 else np.uint64)


def kperm_signatures(feats: Features, num_perm: int, seed: int) -> np.ndarray:
    """Classic k-permutation MinHash, for comparison (bench/sketches.py): value i of a set is
    min over its features of an independent 32-bit hash h_i. O(features · k) per document;
    computed for blocks of 16 permutations over the whole chunk with ``np.minimum.reduceat``."""
    n = len(feats)
    sig = np.zeros((n, num_perm), dtype=np.uint32)
    nonempty = np.flatnonzero(np.diff(feats.offsets) > 0)
    if not len(nonempty):
        return sig
    starts = feats.offsets[:-1][nonempty]
    for block in range(0, num_perm, 16):
        perms = np.arange(block, min(block + 16, num_perm), dtype=np.uint64)
        values = seeded(feats.hashes[None, :] ^ (perms[:, None] * np.uint64(0x9E3779B97F4A7C15)), seed, salt=4)
        sig[nonempty, block:block + len(perms)] = np.minimum.reduceat(values >> _SHIFT32, starts, axis=1).T
    return sig


def _densify(sig: np.ndarray, nonempty: np.ndarray, k: int, seed: int, empty: np.uint64) -> None:
    """Fill empty bins of non-empty rows in place by optimal densification."""
    filled = sig != empty
    single = nonempty & (filled.sum(axis=1) == 1)
    # one non-empty bin: every probe sequence ends there (every text of 1..n-1 words)
    sig[single] = sig[single].min(axis=1, keepdims=True)
    original = sig.copy()
    rows, bins = np.nonzero(~filled & (nonempty & ~single)[:, None])
    attempt = 1
    while rows.size:
        probe = _bin_of(seeded(bins.astype(np.uint64) * np.uint64(1 << 20) + np.uint64(attempt), seed, salt=3), k)
        got = original[rows, probe.astype(np.int64)]
        hit = got != empty
        sig[rows[hit], bins[hit]] = got[hit]
        rows, bins = rows[~hit], bins[~hit]
        attempt += 1


def estimate(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
    """Estimated Jaccard similarity: the fraction of agreeing positions (0 for an empty one)."""
    if len(sig_a) == 0 or len(sig_b) == 0:
        return 0.0
    return float(np.count_nonzero(sig_a == sig_b)) / len(sig_a)
