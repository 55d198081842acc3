"""``pgdedup tune``: what a threshold, k and band choice will find, before indexing anything.

For a pair with Jaccard J, the band step makes it a candidate with probability
P_c(J) = 1 - (1 - J^r)^b (see ``bands``); the estimate then keeps it when at least ⌈T·k⌉ of
k positions agree, which happens with probability P_e(J) = P[Binomial(k, J) ≥ ⌈T·k⌉]
(positions agree independently with probability J). The printed "found" rate is
P_c(J) · P_e(J) — an approximation, since both use the same signature, but a close one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .bands import optimal_bands, s_curve
from .errors import InvalidArgument
from .params import Params


def estimate_keeps(j: float, threshold: float, num_perm: int) -> float:
    """P[Binomial(num_perm, j) >= ceil(threshold · num_perm)]: the estimate clears the threshold."""
    need = math.ceil(threshold * num_perm - 1e-9)
    if j <= 0.0:
        return 0.0 if need > 0 else 1.0
    if j >= 1.0:
        return 1.0
    logs = [math.lgamma(num_perm + 1) - math.lgamma(x + 1) - math.lgamma(num_perm - x + 1)
            + x * math.log(j) + (num_perm - x) * math.log1p(-j) for x in range(need, num_perm + 1)]
    return float(sum(math.exp(v) for v in logs))


@dataclass(frozen=True)
class TuneReport:
    threshold: float
    band_threshold: float
    num_perm: int
    fp_weight: float
    bands: int
    rows: int

    def candidate(self, j: float) -> float:
        return float(s_curve(j, self.bands, self.rows))

    def found(self, j: float) -> float:
        return self.candidate(j) * estimate_keeps(j, self.threshold, self.num_perm)

    def text(self) -> str:
        t = self.threshold
        lines = [f"threshold {t}, num_perm {self.num_perm}: {self.bands} bands × {self.rows} rows "
                 f"(optimised for band threshold {self.band_threshold}, fp weight {self.fp_weight})",
                 "expected recall (candidate / found after the estimate check):"]
        lines += [f"  J = {j:.2f}: {self.candidate(j):6.1%} / {self.found(j):6.1%}"
                  for j in (t, t + 0.05, t + 0.1) if j <= 1.0]
        lines.append("expected false-candidate rate (candidate / found):")
        lines += [f"  J = {j:.2f}: {self.candidate(j):6.1%} / {self.found(j):6.1%}" for j in (t - 0.1, t - 0.2) if j > 0]
        return "\n".join(lines)


def tune(threshold: float, num_perm: int = 128, fp_weight: float = 0.5,
         band_threshold: float | None = None) -> TuneReport:
    """The (bands, rows) pgdedup would choose, with what they will find.

    Raises:
        InvalidArgument: a threshold outside (0, 1), a band threshold outside (0, threshold],
            num_perm outside [8, 1024] or fp_weight outside [0, 1] (checked as ``index`` checks them).
    """
    if not 0.0 <= fp_weight <= 1.0:
        raise InvalidArgument(f"fp_weight must be between 0 and 1, not {fp_weight}")
    bt = Params(threshold=threshold, band_threshold=band_threshold, num_perm=num_perm, bands=1, rows=1).band_threshold
    b, r = optimal_bands(bt, num_perm, fp_weight, 1.0 - fp_weight)
    return TuneReport(threshold, bt, num_perm, fp_weight, b, r)


def chart(report: TuneReport, width: int = 60, height: int = 15) -> str:
    """The S-curve P(candidate | J) as a terminal chart; '|' marks the threshold."""
    xs = np.linspace(0.0, 1.0, width)
    ys = s_curve(xs, report.bands, report.rows)
    grid = [[" "] * width for _ in range(height)]
    col_t = int(round(report.threshold * (width - 1)))
    for row in range(height):
        grid[row][col_t] = "|"
    for col, y in enumerate(ys):
        grid[height - 1 - int(round(y * (height - 1)))][col] = "*"
    out = [f"{'1.0' if i == 0 else '0.0' if i == height - 1 else '   '} {''.join(r)}" for i, r in enumerate(grid)]
    out.append("    " + "0.0".ljust(width - 3) + "1.0")
    out.append(f"    P(candidate | J) for {report.bands} × {report.rows}; | = threshold {report.threshold}")
    return "\n".join(out)


#: Bins of the candidate histograms, in the terminal and in plots.
HIST_BINS = 20


def histogram(similarities: list[float], bins: int = HIST_BINS, width: int = 50) -> str:
    """A terminal histogram of estimated similarities of candidate pairs."""
    counts, edges = np.histogram(similarities, bins=bins, range=(0.0, 1.0))
    top = max(int(counts.max()), 1)
    return "\n".join(f"  {lo:.2f}-{hi:.2f} {'#' * int(round(c / top * width)):<{width}} {c}"
                     for lo, hi, c in zip(edges[:-1], edges[1:], counts))


def _curves(report: TuneReport, similarities: list[float] | None) -> tuple[np.ndarray, ...]:
    """What both plots draw: J on a grid, P(candidate), P(found), and the histogram of
    ``similarities`` (edges, counts, heights scaled to the tallest bar)."""
    xs = np.linspace(0.0, 1.0, 201)
    counts, edges = np.histogram(similarities or [], bins=HIST_BINS, range=(0.0, 1.0))
    return (xs, s_curve(xs, report.bands, report.rows), np.array([report.found(float(x)) for x in xs]),
            edges, counts, counts / max(int(counts.max()), 1))


def svg_plot(report: TuneReport, similarities: list[float] | None = None) -> str:
    """The S-curve as an SVG document; with ``similarities`` (a collection's candidate
    estimates), their histogram too, in grey bars scaled to the tallest, so the curve shows
    where the real candidates fall."""
    xs, ys, found, edges, counts, heights = _curves(report, similarities)
    w, h, m = 480, 320, 40

    def pts(vals: list[float] | np.ndarray) -> str:
        return " ".join(f"{m + x * (w - 2 * m):.1f},{h - m - y * (h - 2 * m):.1f}" for x, y in zip(xs, vals))

    tx = m + report.threshold * (w - 2 * m)
    bar_w = (w - 2 * m) / HIST_BINS
    bars = "".join(
        f'<rect x="{m + lo * (w - 2 * m):.1f}" y="{h - m - v * (h - 2 * m):.1f}" width="{bar_w:.1f}" '
        f'height="{v * (h - 2 * m):.1f}" fill="lightgrey"><title>{c} candidates</title></rect>'
        for lo, v, c in zip(edges[:-1], heights, counts) if c)
    legend = (f'<text x="{m}" y="{h - 6}">grey: the {len(similarities)} candidate pairs by estimate</text>'
              if similarities is not None else "")
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">'
        f'<rect width="{w}" height="{h}" fill="white"/>{bars}{legend}'
        f'<line x1="{m}" y1="{h - m}" x2="{w - m}" y2="{h - m}" stroke="black"/>'
        f'<line x1="{m}" y1="{m}" x2="{m}" y2="{h - m}" stroke="black"/>'
        f'<line x1="{tx:.1f}" y1="{m}" x2="{tx:.1f}" y2="{h - m}" stroke="grey" stroke-dasharray="4"/>'
        f'<polyline fill="none" stroke="steelblue" stroke-width="2" points="{pts(ys)}"/>'
        f'<polyline fill="none" stroke="darkorange" stroke-width="2" points="{pts(found)}"/>'
        f'<text x="{m}" y="{m - 10}">P(candidate | J), {report.bands} × {report.rows} (blue); '
        f'found after estimate (orange)</text>'
        f'<text x="{w - m - 20}" y="{h - m + 16}">J = 1</text><text x="{m - 4}" y="{h - m + 16}">0</text>'
        f'<text x="{tx - 10:.1f}" y="{h - m + 16}">{report.threshold}</text></svg>\n')


def write_plot(report: TuneReport, path: str | Path, similarities: list[float] | None = None) -> None:
    """Write ``svg_plot`` to ``path`` (.svg), or the same picture as PNG (needs matplotlib)."""
    path = Path(path)
    if path.suffix.lower() == ".svg":
        path.write_text(svg_plot(report, similarities))
        return
    if path.suffix.lower() != ".png":
        raise ValueError(f"--plot must end in .svg or .png, not {path.name!r}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ValueError("PNG plots need matplotlib (pip install matplotlib); .svg works without it") from exc
    xs, ys, found, edges, counts, heights = _curves(report, similarities)
    fig, ax = plt.subplots(figsize=(6, 4))
    if similarities is not None:
        ax.bar(edges[:-1], heights, width=1 / HIST_BINS, align="edge", color="lightgrey",
               label=f"{len(similarities)} candidate pairs (scaled)")
    ax.plot(xs, ys, label=f"candidate ({report.bands} × {report.rows})")
    ax.plot(xs, found, label="found after estimate check")
    ax.axvline(report.threshold, color="grey", linestyle="--")
    ax.set_xlabel("Jaccard similarity J")
    ax.set_ylabel("probability")
    ax.legend()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
