"""The band step end to end, against hand-derived probabilities: real signatures of sets with a
known Jaccard, real band buckets, and the fraction of pairs sharing a bucket.

Pure Python, no database. For J = |A ∩ B| / |A ∪ B| fixed by construction, 16 × 8 bands must
make a pair a candidate with probability 1 - (1 - J^8)^16:
    J = 0.8: 0.8^8 = 0.16777216, 1 - 0.83222784^16 = 0.947049
    J = 0.7: 0.7^8 = 0.05764801, 1 - 0.94235199^16 = 0.613268
    J = 0.5: 0.5^8 = 1/256,      1 - (255/256)^16   = 0.060702
This holds only if the positions of one-permutation hashing agree (nearly) independently with
probability J, which is what the test checks.
"""

from __future__ import annotations

import numpy as np
import pytest

from pgdedup.bands import band_buckets
from pgdedup.features import Features
from pgdedup.hashing import mix64
from pgdedup.signatures import signatures


@pytest.mark.parametrize("inter,only,expected", [
    (400, 50, 0.947049),   # J = 400 / 500 = 0.8
    (350, 75, 0.613268),   # J = 350 / 500 = 0.7
    (200, 100, 0.060702),  # J = 200 / 400 = 0.5
])
def test_candidate_rate_of_real_signatures(inter: int, only: int, expected: float) -> None:
    j = inter / (inter + 2 * only)
    rng = np.random.default_rng(inter)
    pairs = 2000
    sets = []
    for _ in range(pairs):
        items = mix64(rng.integers(0, 2**64, size=inter + 2 * only, dtype=np.uint64))
        sets.append(items[:inter + only])                                       # A = common + a-only
        sets.append(np.concatenate([items[:inter], items[inter + only:]]))     # B = common + b-only
    offsets = np.zeros(len(sets) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in sets], out=offsets[1:])
    sig = signatures(Features(offsets=offsets, hashes=np.concatenate(sets)), 128, 1)
    # per-position agreement is J on average (the estimator's unbiasedness, over 256,000 positions)
    agree = np.mean(sig[0::2] == sig[1::2])
    assert abs(agree - j) <= 4 * np.sqrt(j * (1 - j) / (pairs * 128)), agree
    buckets = band_buckets(sig, 16, 8, seed=1)
    rate = np.mean(np.any(buckets[0::2] == buckets[1::2], axis=1))
    se = np.sqrt(expected * (1 - expected) / pairs)
    assert abs(rate - expected) <= 4.5 * se, (j, rate, expected)
