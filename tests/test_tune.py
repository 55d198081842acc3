"""pgdedup tune: its maths against the formulas, its choice against the stated objective."""

from __future__ import annotations

import math
from fractions import Fraction
import importlib.util
import itertools
import re

import numpy as np
import pytest

import pgdedup
from clirun import cli, one_line_error
from pgdedup import Params, sign_texts
from pgdedup.tune import estimate_keeps, tune


def _binomial_tail(j: Fraction, need: int, k: int) -> Fraction:
    """P[Binomial(k, j) >= need], exactly, by summing the terms with rational arithmetic."""
    return sum((math.comb(k, x) * j**x * (1 - j) ** (k - x) for x in range(need, k + 1)), Fraction(0))


def test_tune_0_8_hand_values():
    """tune(0.8) at k = 128: band threshold max(0.8 - 0.15, 0.4) = 0.65 → 16 × 8 (README).

    candidate(J) = 1 - (1 - J^8)^16; the estimate keeps a pair when at least ⌈0.8 · 128⌉ =
    ⌈102.4⌉ = 103 positions agree: P_e(J) = P[Binomial(128, J) >= 103]; found = candidate · P_e.
    Computed here with exact fractions:
        J     candidate   P_e          found
        0.70  0.613268    0.00505051   0.00309732
        0.80  0.947049    0.50005501   0.47357649
        0.85  0.993842    0.93637359   0.93060768
        0.90  0.999877    0.99963872   0.99951622
    """
    r = tune(0.8)
    assert (r.band_threshold, r.bands, r.rows, r.num_perm) == (0.65, 16, 8, 128)
    table = {"0.7": (0.613268, 0.00309732), "0.8": (0.947049, 0.47357649),
             "0.85": (0.993842, 0.93060768), "0.9": (0.999877, 0.99951622)}
    for js, (cand, found) in table.items():
        j = Fraction(js)
        exact_cand = 1 - (1 - j**8) ** 16
        exact_found = exact_cand * _binomial_tail(j, 103, 128)
        assert float(exact_cand) == pytest.approx(cand, abs=1e-6)  # the table is right
        assert float(exact_found) == pytest.approx(found, abs=1e-8)
        assert r.candidate(float(j)) == pytest.approx(float(exact_cand), rel=1e-12)
        assert r.found(float(j)) == pytest.approx(float(exact_found), rel=1e-9)


@pytest.mark.parametrize("t", [0.5, 0.7, 0.9])
def test_found_is_candidate_times_exact_binomial_tail(t):
    r = tune(t)
    need = math.ceil(Fraction(str(t)) * 128)  # exact: 64, 90 (89.6), 116 (115.2)
    assert need == {0.5: 64, 0.7: 90, 0.9: 116}[t]
    for js in ("0.3", str(round(t - 0.1, 2)), str(t), str(round(t + 0.05, 2)), "0.99"):
        j = Fraction(js)
        cand = 1 - (1 - j**r.rows) ** r.bands
        assert r.candidate(float(j)) == pytest.approx(float(cand), rel=1e-9, abs=1e-15)
        assert r.found(float(j)) == pytest.approx(float(cand * _binomial_tail(j, need, 128)), rel=1e-9, abs=1e-15)


def test_found_close_to_simulated_joint_probability():
    """"found" is documented as an approximation of P(candidate AND estimate >= T) (both come from
    one signature). Simulate that joint event: positions agree independently with probability J,
    candidate = some band all-agreeing, kept = at least 103 of 128 agreeing."""
    r = tune(0.8)
    rng = np.random.default_rng(8)
    trials = 20000
    for j in (0.75, 0.8, 0.85, 0.9):
        agree = rng.random((trials, 128)) < j
        cand = np.any(np.all(agree.reshape(trials, 16, 8), axis=2), axis=1)
        joint = np.mean(cand & (agree.sum(axis=1) >= 103))
        # positively correlated events: the product underestimates the joint probability slightly
        # (simulated: 0.090 vs 0.073 at J = 0.75, 0.493 vs 0.474 at 0.8); never by more than 0.035
        assert r.found(j) - 0.01 <= joint <= r.found(j) + 0.035, (j, joint, r.found(j))


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
    assert r.band_threshold == {0.8: 0.65, 0.6: 0.45, 0.9: 0.75}[t]  # max(t - 0.15, t / 2), by hand
    x_lo = np.linspace(0, r.band_threshold, 4001)
    x_hi = np.linspace(r.band_threshold, 1, 4001)
    costs = {}
    for b in range(1, 65):
        for rows in range(1, 64 // b + 1):
            fp = np.trapezoid(1 - (1 - x_lo**rows) ** b, x_lo)
            fn = np.trapezoid((1 - x_hi**rows) ** b, x_hi)
            costs[(b, rows)] = w * fp + (1 - w) * fn
    best = min(costs, key=costs.get)
    # the very same pair, or one whose brute-force cost ties the minimum (quadrature error)
    assert (r.bands, r.rows) == best or costs[(r.bands, r.rows)] <= costs[best] * (1 + 1e-6), (best, r)


def _histogram_bars(stdout: str) -> list[int]:
    return [int(line.split()[-1]) for line in stdout.splitlines() if re.match(r"^  [01]\.\d\d-[01]\.\d\d ", line)]


def test_tune_cli(tmp_path, conn, dsn):
    conn.execute("CREATE TABLE t (id int PRIMARY KEY, body text)")
    base = " ".join(f"w{i}" for i in range(100))
    texts = [base.replace(f"w{i}", "x") for i in range(20)]
    conn.cursor().executemany("INSERT INTO t VALUES (%s, %s)", list(enumerate(texts)))
    pgdedup.index("t", "id", ["body"], dsn=dsn, progress=False)
    svg = tmp_path / "curve.svg"
    proc = cli("tune", "t", "--threshold", "0.8", "--plot", str(svg), "--dsn", dsn)
    assert proc.returncode == 0, proc.stderr
    # 16 × 8 and 1 - (1 - 0.85^8)^16 = 0.99384 (see test_tune_0_8_hand_values)
    assert "16 bands × 8 rows" in proc.stdout and "J = 0.85:  99.4%" in proc.stdout
    assert f"wrote {svg}" in proc.stdout
    assert svg.read_text().startswith("<svg") and svg.read_text().count("<polyline") == 2

    # Oracle for the histogram: brute force over all 190 pairs of the 20 texts. A pair is a
    # candidate when it shares a band bucket (the band join), its estimate is the fraction of
    # agreeing positions; both from signatures made outside the database.
    signed = sign_texts(texts, Params())
    candidates = [(a, b) for a, b in itertools.combinations(range(20), 2)
                  if np.any(signed.buckets[a] == signed.buckets[b])]
    estimates = [float(np.mean(signed.signature(a) == signed.signature(b))) for a, b in candidates]
    expected_bars = [0] * 20
    for e in estimates:
        expected_bars[min(int(e * 20), 19)] += 1
    n = len(candidates)
    assert conn.execute("SELECT count(*) FROM pgdedup.verified_pairs(1, 0)").fetchone()[0] == n
    assert f"estimated similarity of the {n} candidate pairs of t:" in proc.stdout
    assert _histogram_bars(proc.stdout) == expected_bars
    # the plot carries the same histogram: one grey bar per non-empty bin, its count in its title
    plotted = [int(c) for c in re.findall(r"<title>(\d+) candidates</title>", svg.read_text())]
    assert plotted == [c for c in expected_bars if c] and f"the {n} candidate pairs" in svg.read_text()
    # non-trivial: the band join keeps some pairs and drops others (86 of 190 with these texts;
    # w1 also turns w10..w19 into x0..x9, so some texts are far from the rest)
    assert 20 <= n < 190

    bad = cli("tune", "--threshold", "0.8", "--plot", str(tmp_path / "x.gif"))
    one_line_error(bad, "--plot must end in .svg or .png, not 'x.gif'")
    assert not (tmp_path / "x.gif").exists()
    # a failed tune prints no report first (a script reading stdout got a whole one)
    for bad in (cli("tune", "no_such_collection", "--threshold", "0.8", "--dsn", dsn),
                cli("tune", "--threshold", "0.8", "--plot", str(tmp_path / "no" / "dir" / "x.svg")),
                cli("tune", "--threshold", "0.8", "--plot", str(tmp_path / "x.gif"))):
        one_line_error(bad)
        assert bad.stdout == ""


def _has_matplotlib() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


@pytest.mark.skipif(_has_matplotlib(), reason="matplotlib is installed: the PNG is written instead")
def test_tune_png_without_matplotlib_is_one_line_error(tmp_path):
    png = tmp_path / "x.png"
    proc = cli("tune", "--threshold", "0.8", "--plot", str(png))
    one_line_error(proc, "PNG plots need matplotlib (pip install matplotlib); .svg works without it")
    assert not png.exists()


def test_tune_png(tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "x.png"
    proc = cli("tune", "--threshold", "0.8", "--plot", str(png))
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {png}" in proc.stdout
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 5000
