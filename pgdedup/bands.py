"""LSH banding: choosing (bands, rows) from a threshold, and the band buckets of signatures.

Two signatures become a candidate pair when all r positions of at least one of b bands agree.
With per-position agreement probability J that happens with probability

    P(candidate | J) = 1 - (1 - J**r)**b          (the S-curve)

``optimal_bands`` picks (b, r), b·r ≤ k, minimising the weighted probability mass of false
positives below the threshold t and false negatives above it, as datasketch's MinHashLSH does:

    fp(b, r) = ∫_0^t P(J) dJ,     fn(b, r) = ∫_t^1 (1 - P(J)) dJ,
    cost     = w_fp · fp + w_fn · fn.

The integrands are polynomials of degree b·r ≤ k, so Gauss-Legendre quadrature with more than
k/2 nodes is exact; all (b, r) are evaluated at once in numpy.
"""

from __future__ import annotations

import numpy as np

from .hashing import bucket_hashes


def s_curve(j: np.ndarray | float, bands: int, rows: int) -> np.ndarray:
    """P(candidate | J) for b bands of r rows."""
    return 1.0 - (1.0 - np.asarray(j, dtype=float) ** rows) ** bands


def _integral(lo: float, hi: float, b: np.ndarray, r: np.ndarray, k: int, complement: bool) -> np.ndarray:
    nodes, weights = np.polynomial.legendre.leggauss(k // 2 + 2)
    x = (hi - lo) / 2 * nodes + (hi + lo) / 2
    p = 1.0 - (1.0 - x[None, :] ** r[:, None]) ** b[:, None]
    if complement:
        p = 1.0 - p
    return (hi - lo) / 2 * (p @ weights)


def band_costs(threshold: float, num_perm: int, fp_weight: float = 0.5,
               fn_weight: float = 0.5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All admissible (b, r) with their weighted error: arrays b, r, cost."""
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold must be between 0 and 1 (exclusive), not {threshold}")
    if num_perm < 1:
        raise ValueError(f"num_perm must be positive, not {num_perm}")
    pairs = [(b, r) for b in range(1, num_perm + 1) for r in range(1, num_perm // b + 1)]
    b = np.array([p[0] for p in pairs], dtype=float)
    r = np.array([p[1] for p in pairs], dtype=float)
    fp = _integral(0.0, threshold, b, r, num_perm, complement=False)
    fn = _integral(threshold, 1.0, b, r, num_perm, complement=True)
    return b.astype(int), r.astype(int), fp_weight * fp + fn_weight * fn


def optimal_bands(threshold: float, num_perm: int, fp_weight: float = 0.5,
                  fn_weight: float = 0.5) -> tuple[int, int]:
    """(bands, rows) minimising the weighted false-positive + false-negative mass.

    Ties go to the first pair in (b, r) order, as in datasketch.
    """
    b, r, cost = band_costs(threshold, num_perm, fp_weight, fn_weight)
    best = int(np.argmin(cost))
    return int(b[best]), int(r[best])


def band_buckets(sig: np.ndarray, bands: int, rows: int, seed: int) -> np.ndarray:
    """(n, bands) signed 64-bit bucket of each band: xxh3 of the band's r values as little-endian
    uint32 bytes, seeded with seed + band (``hashing.bucket_hashes``)."""
    n = sig.shape[0]
    data = np.ascontiguousarray(sig[:, : bands * rows].astype("<u4")).view(np.uint8).reshape(n, bands, rows * 4)
    return bucket_hashes(data, np.array([seed + band for band in range(bands)], dtype=np.uint64))
