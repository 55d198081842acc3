"""LSH banding: the S-curve, the choice of (bands, rows), band buckets, and Params validation.

Pure Python, no database.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
from datasketch.lsh import _optimal_param

from pgdedup.bands import band_buckets, band_costs, optimal_bands, s_curve
from pgdedup.params import BAND_SLACK, Params

THRESHOLDS = [round(0.5 + 0.05 * i, 2) for i in range(10)]  # 0.5, 0.55, ..., 0.95
NUM_PERMS = (64, 128, 256)
GRID = 20001  # trapezoid nodes on [0, 1]; every threshold above is a grid point


# --------------------------------------------------------------------------------------------
# S-curve
# --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("bands,rows", [(1, 1), (1, 8), (20, 5), (9, 13), (32, 4), (128, 1)])
@pytest.mark.parametrize("j", [0.0, 0.05, 0.3, 0.5, 0.7, 0.8, 0.93, 1.0])
def test_s_curve_matches_formula(j: float, bands: int, rows: int) -> None:
    expected = 1.0 - (1.0 - j ** rows) ** bands
    assert float(s_curve(j, bands, rows)) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_s_curve_vectorised_and_monotone() -> None:
    j = np.linspace(0.0, 1.0, 101)
    p = s_curve(j, 20, 5)
    assert p.shape == j.shape
    expected = np.array([1.0 - (1.0 - x ** 5) ** 20 for x in j])
    np.testing.assert_allclose(p, expected, rtol=1e-12, atol=1e-15)
    assert p[0] == 0.0 and p[-1] == 1.0
    assert np.all(np.diff(p) >= 0)


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
    """Weighting false negatives more must not give a pair with a higher false-negative mass."""
    def fn_mass(b: int, r: int, t: float) -> float:
        x = np.linspace(t, 1.0, 20001)
        return float(np.sum((1 - s_curve(x, b, r))[1:] + (1 - s_curve(x, b, r))[:-1]) * (x[1] - x[0]) / 2)

    t = 0.8
    balanced = optimal_bands(t, 128)
    fn_heavy = optimal_bands(t, 128, fp_weight=0.1, fn_weight=0.9)
    assert fn_mass(*fn_heavy, t) <= fn_mass(*balanced, t)
    assert fn_heavy == _optimal_param(t, 128, 0.1, 0.9)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_optimal_bands_rejects_bad_threshold(bad: float) -> None:
    with pytest.raises(ValueError):
        optimal_bands(bad, 128)


# --------------------------------------------------------------------------------------------
# band_buckets
# --------------------------------------------------------------------------------------------

def _random_sigs(n: int, k: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 2**32, size=(n, k), dtype=np.uint64).astype(np.uint32)


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

def test_params_defaults_to_optimal_bands_for_band_threshold() -> None:
    """By default the bands are optimal for ``band_threshold`` = threshold - BAND_SLACK."""
    for t in (0.5, 0.7, 0.8, 0.9):
        for k in (64, 128, 256):
            p = Params(threshold=t, num_perm=k)
            assert p.band_threshold == pytest.approx(t - BAND_SLACK)
            assert 0 < p.band_threshold < p.threshold
            assert (p.bands, p.rows) == optimal_bands(p.band_threshold, k)
            assert p.bands * p.rows <= k


def test_params_explicit_band_threshold() -> None:
    for t, bt in ((0.8, 0.8), (0.8, 0.7), (0.9, 0.5)):
        p = Params(threshold=t, band_threshold=bt)
        assert p.band_threshold == bt
        assert (p.bands, p.rows) == optimal_bands(bt, p.num_perm)


@pytest.mark.parametrize("bt", [0.85, 1.0, -0.1, float("nan")])
def test_params_rejects_bad_band_threshold(bt: float) -> None:
    with pytest.raises(ValueError):
        Params(threshold=0.8, band_threshold=bt)


def test_params_keeps_explicit_bands() -> None:
    p = Params(num_perm=128, bands=16, rows=8)
    assert (p.bands, p.rows) == (16, 8)
    p = Params(num_perm=128, bands=10, rows=3)
    assert (p.bands, p.rows) == (10, 3)


@pytest.mark.parametrize("bands,rows", [(17, 8), (16, 9), (129, 1), (1, 129), (12, 12)])
def test_params_rejects_bands_times_rows_over_num_perm(bands: int, rows: int) -> None:
    assert bands * rows > 128
    with pytest.raises(ValueError):
        Params(num_perm=128, bands=bands, rows=rows)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.2, 1.01, float("nan"), float("inf")])
def test_params_rejects_bad_threshold(bad: float) -> None:
    with pytest.raises(ValueError):
        Params(threshold=bad)


@pytest.mark.parametrize("kw", [dict(num_perm=4), dict(num_perm=2048), dict(unit="token"), dict(ngram=0)])
def test_params_rejects_bad_fields(kw: dict) -> None:
    with pytest.raises(ValueError):
        Params(**kw)


def test_params_differences() -> None:
    a, b = Params(), Params(threshold=0.9)
    assert a.differences(a) == []
    fields = {d.split(":")[0] for d in a.differences(b)}
    assert "threshold" in fields
    expected = {f for f, v in a.as_dict().items() if b.as_dict()[f] != v}
    assert fields == expected
