"""LSH banding: the S-curve, the choice of (bands, rows), band buckets, and Params validation.

Pure Python, no database.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import numpy as np
import pytest
import xxhash
from datasketch.lsh import _optimal_param

from pgdedup.bands import band_buckets, band_costs, optimal_bands, s_curve
from pgdedup.hashing import bucket_hashes
from pgdedup.params import Params

THRESHOLDS = [round(0.5 + 0.05 * i, 2) for i in range(10)]  # 0.5, 0.55, ..., 0.95
NUM_PERMS = (64, 128, 256)
GRID = 20001  # trapezoid nodes on [0, 1]; every threshold above is a grid point


# --------------------------------------------------------------------------------------------
# S-curve
# --------------------------------------------------------------------------------------------

# P(candidate | J) = 1 - (1 - J^r)^b, evaluated by hand / exactly (fractions), never with the
# package's expression:
#   b=1,  r=1:  P = J                                  (one position decides)
#   b=1,  r=8:  P = J^8:              0.5^8  = 1/256                          = 0.00390625
#   b=128, r=1: P = 1 - (1-J)^128:    J=0.5 → 1 - 2^-128                      ≈ 1 - 2.9e-39
#   b=20, r=5:  J=0.5: 1 - (1 - 1/32)^20 = 1 - (31/32)^20                     = 0.470050715…
#   b=16, r=8:  J=0.8: 0.8^8 = 0.16777216; 1 - 0.83222784^16                  = 0.947048796…
#               J=0.7: 0.7^8 = 0.05764801; 1 - 0.94235199^16                  = 0.613267712…
#               J=0.85: 0.85^8 = 0.2724905…; 1 - 0.7275094…^16                = 0.993842300…
#   b=9, r=13:  J=0.8: 0.8^13 = 0.05497558…; 1 - 0.9450244…^9                 = 0.398843…
#               J=0.7: 0.7^13 = 0.0096889…;  1 - 0.9903110…^9                 = 0.083896…
# (README's table: 16 × 8 → 0.61 / 0.95 / 0.99 / 1.00 at J = 0.7 / 0.8 / 0.85 / 0.9;
#  9 × 13 → 0.08 / 0.40 / 0.69 / 0.93.)
HAND_VALUES = [
    (1, 1, "0.3", Fraction(3, 10)),
    (1, 1, "0.93", Fraction(93, 100)),
    (1, 8, "0.5", Fraction(1, 256)),
    (128, 1, "0.5", 1 - Fraction(1, 2**128)),
    (20, 5, "0.5", 1 - Fraction(31, 32) ** 20),
    (16, 8, "0.8", 1 - (1 - Fraction(16777216, 10**8)) ** 16),
    (16, 8, "0.7", 1 - (1 - Fraction(5764801, 10**8)) ** 16),
    (9, 13, "0.8", 1 - (1 - Fraction(4, 5) ** 13) ** 9),
    (9, 13, "0.0", Fraction(0)),
    (9, 13, "1.0", Fraction(1)),
]


@pytest.mark.parametrize("bands,rows,j,exact", HAND_VALUES)
def test_s_curve_hand_values(bands: int, rows: int, j: str, exact: Fraction) -> None:
    assert float(s_curve(float(j), bands, rows)) == pytest.approx(float(exact), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("bands,rows,values", [
    (16, 8, {0.7: 0.613268, 0.8: 0.947049, 0.85: 0.993842, 0.9: 0.999877}),
    (9, 13, {0.7: 0.083896, 0.8: 0.398844, 0.85: 0.686440, 0.9: 0.928604}),
])
def test_s_curve_readme_table(bands: int, rows: int, values: dict[float, float]) -> None:
    """The figures README quotes, to 6 decimals (computed once with 40-digit decimals)."""
    for j, p in values.items():
        assert float(s_curve(j, bands, rows)) == pytest.approx(p, abs=1e-6), j


@pytest.mark.parametrize("bands,rows", [(16, 8), (9, 13), (20, 5), (32, 4)])
def test_s_curve_against_simulated_banding(bands: int, rows: int) -> None:
    """Monte Carlo of the band step itself: each of b·r positions agrees independently with
    probability J; a pair is a candidate when some band agrees in all r positions."""
    rng = np.random.default_rng(bands * 1000 + rows)
    trials = 20000
    for j in (0.3, 0.5, 0.65, 0.8, 0.9):
        agree = rng.random((trials, bands, rows)) < j
        simulated = np.any(np.all(agree, axis=2), axis=1).mean()
        p = float(s_curve(j, bands, rows))
        se = max(np.sqrt(p * (1 - p) / trials), 1 / trials)
        assert abs(simulated - p) <= 4.5 * se, (j, simulated, p)


def test_s_curve_vectorised_and_monotone() -> None:
    j = np.linspace(0.0, 1.0, 101)
    p = s_curve(j, 20, 5)
    assert p.shape == j.shape
    # the array call agrees with one scalar call per point (vectorisation changes nothing but the
    # last bits: numpy 2.4's array power may round differently from its scalar one, and 1 - (1 - x)
    # turns a 1e-16 difference into a relative 1e-9 where p is tiny)
    np.testing.assert_allclose(p, [float(s_curve(float(x), 20, 5)) for x in j], rtol=1e-12, atol=1e-15)
    assert p[0] == 0.0 and p[-1] == 1.0
    assert np.all(np.diff(p) >= 0)
    # at J = 0.5 (index 50): 1 - (31/32)^20, as above
    assert p[50] == pytest.approx(float(1 - Fraction(31, 32) ** 20), rel=1e-12)


# --------------------------------------------------------------------------------------------
# optimal_bands
# --------------------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _brute_force_costs(num_perm: int) -> dict[tuple[int, int], np.ndarray]:
    """Trapezoid-rule cost of every (b, r) with b*r <= num_perm, for every threshold in THRESHOLDS.

    fp(t) = ∫_0^t P(J) dJ, fn(t) = ∫_t^1 1 - P(J) dJ, cost = (fp + fn) / 2, P = s-curve, all on a
    uniform grid of GRID points (independent of the package's Gauss-Legendre quadrature).
    """
    x = np.linspace(0.0, 1.0, GRID)
    dx = 1.0 / (GRID - 1)
    t_index = np.array([round(t * (GRID - 1)) for t in THRESHOLDS])
    assert np.allclose(x[t_index], THRESHOLDS, atol=1e-12)
    t = np.array(THRESHOLDS)
    costs: dict[tuple[int, int], np.ndarray] = {}
    for b in range(1, num_perm + 1):
        r = np.arange(1, num_perm // b + 1)
        p = 1.0 - (1.0 - x[None, :] ** r[:, None]) ** b  # (len(r), GRID)
        cumulative = np.zeros_like(p)
        cumulative[:, 1:] = np.cumsum((p[:, 1:] + p[:, :-1]) * (dx / 2), axis=1)
        fp = cumulative[:, t_index]
        fn = (1.0 - t)[None, :] - (cumulative[:, -1:] - cumulative[:, t_index])
        cost = 0.5 * fp + 0.5 * fn
        for i, rows in enumerate(r):
            costs[(b, int(rows))] = cost[i]
    return costs


@pytest.mark.parametrize("num_perm", NUM_PERMS)
def test_optimal_bands_matches_datasketch(num_perm: int) -> None:
    for t in THRESHOLDS:
        expected = _optimal_param(t, num_perm, 0.5, 0.5)
        got = optimal_bands(t, num_perm)
        assert got == expected, (t, num_perm)
        b, r = got
        assert b >= 1 and r >= 1 and b * r <= num_perm


@pytest.mark.parametrize("num_perm", NUM_PERMS)
def test_optimal_bands_is_brute_force_argmin(num_perm: int) -> None:
    costs = _brute_force_costs(num_perm)
    pairs = list(costs)
    table = np.array([costs[p] for p in pairs])  # (pairs, thresholds)
    for ti, t in enumerate(THRESHOLDS):
        chosen = optimal_bands(t, num_perm)
        assert chosen in costs
        best = pairs[int(np.argmin(table[:, ti]))]
        best_cost = table[:, ti].min()
        chosen_cost = costs[chosen][ti]
        # Either the very same pair, or one whose cost ties the brute-force minimum up to
        # the quadrature error of the trapezoid rule.
        assert chosen == best or chosen_cost <= best_cost * (1 + 1e-6), (t, num_perm, chosen, best)


@pytest.mark.parametrize("num_perm", (64, 128))
def test_band_costs_agree_with_brute_force_quadrature(num_perm: int) -> None:
    costs = _brute_force_costs(num_perm)
    for ti, t in enumerate(THRESHOLDS):
        b, r, cost = band_costs(t, num_perm)
        got = dict(zip(zip(b.tolist(), r.tolist()), cost.tolist()))
        assert set(got) == set(costs)
        for pair, c in got.items():
            assert c == pytest.approx(costs[pair][ti], rel=2e-6, abs=1e-9), (t, pair)


def test_optimal_bands_weights_shift_the_choice() -> None:
    """Weighting false negatives more must not give a pair with a higher false-negative mass.

    The masses are midpoint-rule integrals of an S-curve written out here, not ``s_curve``.
    """
    def fn_mass(b: int, r: int, t: float, nodes: int = 20000) -> float:
        h = (1.0 - t) / nodes
        return h * sum((1.0 - (t + (i + 0.5) * h) ** r) ** b for i in range(nodes))

    t = 0.8
    balanced = optimal_bands(t, 128)
    fn_heavy = optimal_bands(t, 128, fp_weight=0.1, fn_weight=0.9)
    assert balanced == (9, 13)  # datasketch's choice for 0.8 (README)
    assert fn_heavy == _optimal_param(t, 128, 0.1, 0.9)
    assert fn_heavy != balanced
    assert fn_mass(*fn_heavy, t) < fn_mass(*balanced, t)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_optimal_bands_rejects_bad_threshold(bad: float) -> None:
    with pytest.raises(ValueError, match=r"^threshold must be between 0 and 1 \(exclusive\), not "):
        optimal_bands(bad, 128)


# --------------------------------------------------------------------------------------------
# band_buckets
# --------------------------------------------------------------------------------------------

def _random_sigs(n: int, k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2**32, size=(n, k), dtype=np.uint64).astype(np.uint32)


def _ref_band_bucket(values: list[int], band: int, seed: int) -> int:
    """Slow reference: xxh3-64 of the band's r values as little-endian uint32 bytes, seeded with
    seed + band, shifted into the signed 64-bit range (bigint)."""
    raw = b"".join(int(v).to_bytes(4, "little") for v in values)
    return xxhash.xxh3_64_intdigest(raw, seed + band) - (1 << 63)


def test_band_buckets_equal_slow_reference() -> None:
    bands, rows = 9, 13
    sig = _random_sigs(20, 128, 9)
    got = band_buckets(sig, bands, rows, seed=5)
    for i in range(len(sig)):
        for band in range(bands):
            values = sig[i, band * rows:(band + 1) * rows].tolist()
            assert got[i, band] == _ref_band_bucket(values, band, 5), (i, band)


@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 8, 13, 16, 24, 25, 32, 33, 60, 64])
def test_band_buckets_equal_slow_reference_for_every_hash_path(rows: int) -> None:
    """Bands of 4 to 256 bytes: each of XXH3's length paths computed in numpy (4-8, 9-16,
    17-128 bytes) and the row-by-row xxhash calls past them."""
    bands = 128 // rows
    sig = _random_sigs(12, 128, rows)
    got = band_buckets(sig, bands, rows, seed=2**40 + rows)
    for i in range(len(sig)):
        for band in range(bands):
            values = sig[i, band * rows:(band + 1) * rows].tolist()
            assert got[i, band] == _ref_band_bucket(values, band, 2**40 + rows), (i, band)


def test_bucket_hashes_are_xxh3_for_any_length_and_seed() -> None:
    """The numpy XXH3 against the xxhash library: random rows of 0 to 140 bytes, with seeds
    from the whole uint64 range (0 and 2**64 - 1 included)."""
    rng = np.random.default_rng(4)
    for length in range(141):
        data = rng.integers(0, 256, size=(40, length), dtype=np.uint8)
        seeds = rng.integers(0, 2**64, size=40, dtype=np.uint64, endpoint=False)
        seeds[0], seeds[1] = 0, 2**64 - 1
        want = [xxhash.xxh3_64_intdigest(data[i].tobytes(), int(seeds[i])) - (1 << 63) for i in range(40)]
        assert bucket_hashes(data, seeds).tolist() == want, length


def test_band_buckets_shape_and_determinism() -> None:
    sig = _random_sigs(50, 128, 1)
    a = band_buckets(sig, 16, 8, seed=1)
    b = band_buckets(sig.copy(), 16, 8, seed=1)
    assert a.shape == (50, 16) and a.dtype == np.int64
    np.testing.assert_array_equal(a, b)
    # Random signatures: all buckets distinct (a 64-bit collision would be a 2**-50 event).
    assert len(np.unique(a)) == a.size


def test_band_buckets_change_with_any_value_in_band() -> None:
    bands, rows = 9, 13
    sig = _random_sigs(1, 128, 2)
    base = band_buckets(sig, bands, rows, seed=1)[0]
    for pos in range(bands * rows):
        changed = sig.copy()
        changed[0, pos] ^= np.uint32(1 << (pos % 32))  # flip one bit of one value
        got = band_buckets(changed, bands, rows, seed=1)[0]
        band = pos // rows
        assert got[band] != base[band], pos
        others = np.arange(bands) != band
        np.testing.assert_array_equal(got[others], base[others])
    # Positions past bands * rows are not part of any band.
    for pos in range(bands * rows, 128):
        changed = sig.copy()
        changed[0, pos] ^= np.uint32(0xFFFFFFFF)
        np.testing.assert_array_equal(band_buckets(changed, bands, rows, seed=1)[0], base)


def test_band_buckets_equal_for_equal_bands() -> None:
    bands, rows = 16, 8
    sig = _random_sigs(2, 128, 3)
    sig[1, 3 * rows:4 * rows] = sig[0, 3 * rows:4 * rows]  # rows 0 and 1 share band 3 only
    bk = band_buckets(sig, bands, rows, seed=1)
    equal = bk[0] == bk[1]
    assert equal[3]
    assert equal.sum() == 1


def test_band_buckets_depend_on_band_index_and_seed() -> None:
    bands, rows = 16, 8
    sig = np.tile(_random_sigs(1, rows, 4), (1, bands))  # every band holds the same values
    bk = band_buckets(sig, bands, rows, seed=1)[0]
    assert len(set(bk.tolist())) == bands
    other_seed = band_buckets(sig, bands, rows, seed=2)[0]
    assert not np.any(other_seed == bk)


def test_band_buckets_int32_view_equals_uint32() -> None:
    """Signatures are stored as int4[]: bucketing the int32 view must give the same keys."""
    sig = _random_sigs(10, 128, 5)
    np.testing.assert_array_equal(band_buckets(sig.view(np.int32), 16, 8, 1), band_buckets(sig, 16, 8, 1))


# --------------------------------------------------------------------------------------------
# Params
# --------------------------------------------------------------------------------------------

# (threshold, num_perm) -> (band_threshold, bands, rows). band_threshold = max(T - 0.15, T / 2)
# by hand (0.2 -> max(0.05, 0.1) = 0.1; 0.3 -> max(0.15, 0.15) = 0.15; 0.8 -> 0.65; 0.04 -> 0.02);
# (bands, rows) are the brute-force argmin for that band threshold, the same as datasketch's
# _optimal_param (both re-checked in test_params_table_is_the_brute_force_choice).
PARAMS_TABLE = {
    (0.2, 64): (0.1, 15, 1), (0.2, 128): (0.1, 64, 2), (0.2, 256): (0.1, 117, 2),
    (0.3, 128): (0.15, 51, 2),
    (0.5, 64): (0.35, 21, 3), (0.5, 128): (0.35, 32, 4), (0.5, 256): (0.35, 61, 4),
    (0.7, 64): (0.55, 12, 5), (0.7, 128): (0.55, 21, 6), (0.7, 256): (0.55, 36, 7),
    (0.8, 64): (0.65, 9, 7), (0.8, 128): (0.65, 16, 8), (0.8, 256): (0.65, 28, 9),
    (0.9, 64): (0.75, 7, 9), (0.9, 128): (0.75, 11, 11), (0.9, 256): (0.75, 21, 12),
    (0.04, 64): (0.02, 64, 1), (0.04, 128): (0.02, 82, 1), (0.04, 256): (0.02, 82, 1),
}


@pytest.mark.parametrize("t,k", list(PARAMS_TABLE))
def test_params_defaults(t: float, k: int) -> None:
    p = Params(threshold=t, num_perm=k)
    assert (p.band_threshold, p.bands, p.rows) == PARAMS_TABLE[(t, k)]


def test_params_table_is_the_brute_force_choice() -> None:
    """The table above is right: datasketch picks the same (b, r), and no admissible (b, r) has a
    lower cost by a plain-Python midpoint rule (2000 nodes per side; ties within 1e-6)."""
    def cost(b: int, r: int, t: float, nodes: int = 2000) -> float:
        lo, hi = t / nodes, (1 - t) / nodes
        fp = lo * sum(1 - (1 - ((i + 0.5) * lo) ** r) ** b for i in range(nodes))
        fn = hi * sum((1 - (t + (i + 0.5) * hi) ** r) ** b for i in range(nodes))
        return 0.5 * fp + 0.5 * fn

    for (t, k), (bt, b, r) in PARAMS_TABLE.items():
        assert _optimal_param(bt, k, 0.5, 0.5) == (b, r), (t, k)
    # brute force for two entries (all 2·k·H(k) pairs: kept small for time)
    for k, bt, chosen in ((64, 0.65, (9, 7)), (64, 0.1, (15, 1))):
        costs = {(b, r): cost(b, r, bt) for b in range(1, k + 1) for r in range(1, k // b + 1)}
        assert costs[chosen] <= min(costs.values()) * (1 + 1e-6), (k, bt)


def test_params_explicit_band_threshold() -> None:
    # brute-force / datasketch choices at k = 128 for these band thresholds
    for t, bt, expected in ((0.8, 0.8, (9, 13)), (0.8, 0.7, (14, 9)), (0.9, 0.5, (25, 5))):
        p = Params(threshold=t, band_threshold=bt)
        assert p.band_threshold == bt
        assert (p.bands, p.rows) == expected
        assert _optimal_param(bt, 128, 0.5, 0.5) == expected


@pytest.mark.parametrize("bt", [0.85, 1.0, -0.1, float("nan")])
def test_params_rejects_bad_band_threshold(bt: float) -> None:
    with pytest.raises(ValueError, match=r"^band_threshold must be in \(0, threshold\], not "):
        Params(threshold=0.8, band_threshold=bt)


def test_params_keeps_explicit_bands() -> None:
    p = Params(num_perm=128, bands=16, rows=8)
    assert (p.bands, p.rows) == (16, 8)
    p = Params(num_perm=128, bands=10, rows=3)
    assert (p.bands, p.rows) == (10, 3)


@pytest.mark.parametrize("bands,rows", [(17, 8), (16, 9), (129, 1), (1, 129), (12, 12)])
def test_params_rejects_bands_times_rows_over_num_perm(bands: int, rows: int) -> None:
    assert bands * rows > 128
    with pytest.raises(ValueError, match=rf"^bands × rows = {bands * rows} exceeds num_perm 128$"):
        Params(num_perm=128, bands=bands, rows=rows)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.2, 1.01, float("nan"), float("inf")])
def test_params_rejects_bad_threshold(bad: float) -> None:
    with pytest.raises(ValueError, match=r"^threshold must be between 0 and 1 \(exclusive\), not "):
        Params(threshold=bad)


@pytest.mark.parametrize("kw,message", [
    (dict(num_perm=4), "num_perm must be between 8 and 1024, not 4"),
    (dict(num_perm=2048), "num_perm must be between 8 and 1024, not 2048"),
    (dict(unit="token"), "unit must be 'word' or 'char', not 'token'"),
    (dict(ngram=0), "ngram must be between 1 and 64, not 0"),
])
def test_params_rejects_bad_fields(kw: dict, message: str) -> None:
    with pytest.raises(ValueError) as info:
        Params(**kw)
    assert str(info.value) == message


def test_params_differences() -> None:
    a, b = Params(), Params(threshold=0.9)
    assert a.differences(a) == []
    # 0.9 → band threshold 0.75 → 11 × 11 (PARAMS_TABLE); everything else equal
    assert a.differences(b) == [
        "threshold: stored 0.8, requested 0.9",
        "band_threshold: stored 0.65, requested 0.75",
        "bands: stored 16, requested 11",
        "rows: stored 8, requested 11",
    ]
