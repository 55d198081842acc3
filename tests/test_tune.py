"""pgdedup tune: its maths against the formulas, its choice against the stated objective."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

import pgdedup
from pgdedup.tune import estimate_keeps, tune


@pytest.mark.parametrize("t", [0.5, 0.7, 0.8, 0.9])
def test_s_curve_and_found_follow_the_formulas(t):
    r = tune(t)
    for j in (0.3, t - 0.1, t, t + 0.05, 0.99):
        assert r.candidate(j) == pytest.approx(1 - (1 - j ** r.rows) ** r.bands, abs=1e-12)
        assert r.found(j) == pytest.approx(r.candidate(j) * estimate_keeps(j, t, 128), abs=1e-12)


def test_estimate_keeps_is_the_binomial_tail():
    k, t = 16, 0.75
    need = 12
    for j in (0.2, 0.5, 0.75, 0.9):
        exact = sum(math.comb(k, x) * j**x * (1 - j) ** (k - x) for x in range(need, k + 1))
        assert estimate_keeps(j, t, k) == pytest.approx(exact, rel=1e-9)
    assert estimate_keeps(1.0, t, k) == 1.0 and estimate_keeps(0.0, t, k) == 0.0


@pytest.mark.parametrize("t,w", [(0.8, 0.5), (0.8, 0.2), (0.6, 0.7), (0.9, 0.5)])
def test_choice_minimises_the_stated_objective(t, w):
    """Brute force with the trapezoid rule over every b·r ≤ k, independently of bands.py."""
    r = tune(t, 64, fp_weight=w)
    x_lo = np.linspace(0, r.band_threshold, 4001)
    x_hi = np.linspace(r.band_threshold, 1, 4001)
    best, best_cost = None, math.inf
    for b in range(1, 65):
        for rows in range(1, 64 // b + 1):
            fp = np.trapezoid(1 - (1 - x_lo**rows) ** b, x_lo)
            fn = np.trapezoid((1 - x_hi**rows) ** b, x_hi)
            cost = w * fp + (1 - w) * fn
            if cost < best_cost:
                best, best_cost = (b, rows), cost
    chosen = next(c for b, rows, c in zip(*_costs(r)) if (b, rows) == (r.bands, r.rows))
    assert (r.bands, r.rows) == best or chosen == pytest.approx(best_cost, rel=1e-4)


def _costs(r):
    from pgdedup.bands import band_costs
    return band_costs(r.band_threshold, r.num_perm, r.fp_weight, 1 - r.fp_weight)


def test_tune_cli(tmp_path, conn, dsn):
    conn.execute("CREATE TABLE t (id int PRIMARY KEY, body text)")
    base = " ".join(f"w{i}" for i in range(100))
    conn.cursor().executemany("INSERT INTO t VALUES (%s, %s)",
                              [(i, base.replace(f"w{i}", "x")) for i in range(20)])
    pgdedup.index("t", "id", ["body"], dsn=dsn, progress=False)
    svg = tmp_path / "curve.svg"
    proc = subprocess.run([sys.executable, "-m", "pgdedup", "tune", "t", "--threshold", "0.8", "--plot", str(svg),
                           "--dsn", dsn], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "16 bands × 8 rows" in proc.stdout and "J = 0.85:  99.4%" in proc.stdout
    assert svg.read_text().startswith("<svg") and "polyline" in svg.read_text()
    n = conn.execute("SELECT count(*) FROM pgdedup.verified_pairs(1, 0)").fetchone()[0]
    assert n > 0 and f"of the {n} candidate pairs of t" in proc.stdout
    bars = [int(line.split()[-1]) for line in proc.stdout.splitlines() if line.startswith("  0.") or
            line.startswith("  1.")]
    assert sum(bars) == n
    bad = subprocess.run([sys.executable, "-m", "pgdedup", "tune", "--threshold", "0.8", "--plot", "x.gif"],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "--plot must end in .svg or .png" in bad.stderr
