"""Which sketch, and how many bits: one-permutation hashing (OPH, the default) vs classic
k-permutation MinHash, and 32-bit vs 63-bit values, and the low 16 bits of the 32-bit values
that PostgreSQL stores and compares (sql/0023_sketches.sql), on the same features.

Speed: signatures per second for a chunk of ~3 KB documents (features computed once, outside
the timing). Accuracy: for pairs of sets with known Jaccard J (random integer sets, sizes
10..2000, J spread over 0..1), the root-mean-square error of the estimate against J, its mean
(bias), and for 32 and 16 vs 63 bits the number of positions where the truncated values agree
but the 63-bit ones do not (a spurious collision of two different minima, measured by truncating
the 63-bit minima).

    python bench/sketches.py [--docs 4000] [--pairs 2000]
"""

from __future__ import annotations

import argparse
import random
import time

import numpy as np

from pgdedup.features import Features, FeatureSpec, features
from pgdedup.hashing import mix64
from pgdedup.normalise import normalise
from pgdedup.sample import generate
from pgdedup.signatures import kperm_signatures, signatures

K, SEED = 128, 1


def _pairs(count: int, rng: random.Random) -> tuple[Features, np.ndarray]:
    """Features of ``count`` set pairs laid out as documents 2i, 2i+1, and their exact J."""
    docs, js = [], []
    for _ in range(count):
        union = rng.randint(10, 2000)
        shared = rng.randint(0, union)
        a_only = rng.randint(0, union - shared)
        base = rng.getrandbits(40) << 12
        common = list(range(base, base + shared))
        a = common + list(range(base + shared, base + shared + a_only))
        b = common + list(range(base + shared + a_only, base + union))
        docs += [a, b]
        js.append(shared / union)
    lengths = np.array([len(d) for d in docs])
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    hashes = mix64(np.array([x for d in docs for x in d], dtype=np.uint64))
    return Features(offsets, hashes), np.array(js)


def _agree(sig: np.ndarray) -> np.ndarray:
    return sig[0::2] == sig[1::2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=4000)
    parser.add_argument("--pairs", type=int, default=2000)
    args = parser.parse_args()
    texts = [normalise(r[2]) for r in generate(args.docs, seed=7)]
    feats = features(texts, FeatureSpec(), SEED)
    mb = sum(map(len, texts)) / 1e6
    print(f"{args.docs} documents ({mb:.1f} MB, {len(feats.hashes) / args.docs:.0f} shingles each), k = {K}")
    sketches = {"OPH + densification, 32-bit": lambda f: signatures(f, K, SEED),
                "OPH + densification, 63-bit": lambda f: signatures(f, K, SEED, value_bits=63),
                "OPH + densification, 16 stored": lambda f: signatures(f, K, SEED) & np.uint32(0xFFFF),
                "k-permutation, 32-bit": lambda f: kperm_signatures(f, K, SEED)}
    pair_feats, exact = _pairs(args.pairs, random.Random(3))
    agreement = {}
    print(f"{'sketch':30} {'docs/s':>9} {'RMSE':>8} {'bias':>9} {'bound':>8}")
    bound = np.sqrt(np.mean(exact * (1 - exact) / K))
    for name, sketch in sketches.items():
        sketch(feats)  # warm up
        t0 = time.perf_counter()
        sketch(feats)
        rate = args.docs / (time.perf_counter() - t0)
        agree = _agree(sketch(pair_feats))
        agreement[name] = agree
        err = agree.mean(axis=1) - exact
        print(f"{name:30} {rate:9,.0f} {np.sqrt(np.mean(err ** 2)):8.4f} {err.mean():+9.5f} {bound:8.4f}")
    # the cost of keeping fewer bits: the same minima, truncated, agree where the full values do not
    full = signatures(pair_feats, K, SEED, value_bits=63)
    differ = ~agreement["OPH + densification, 63-bit"]
    print()
    for bits in (32, 16):
        spurious = _agree(full & np.uint64((1 << bits) - 1)) & differ
        print(f"63-bit minima truncated to {bits} bits: {int(spurious.sum())} spurious agreements in "
              f"{int(differ.sum()):,} disagreeing positions ({args.pairs} pairs × {K} positions); expected "
              f"~{differ.sum() * 2.0 ** -bits:.2g} (2**-{bits} each)")
    differ = ~agreement["OPH + densification, 32-bit"]  # what PostgreSQL stores: the 32-bit values' low 16 bits
    spurious = agreement["OPH + densification, 16 stored"] & differ
    print(f"32-bit minima stored as their low 16 bits: {int(spurious.sum())} spurious agreements in "
          f"{int(differ.sum()):,} disagreeing positions; expected ~{differ.sum() * 2.0 ** -16:.2g}")
    print("bound = sqrt(mean J(1-J)/k), the k-permutation standard error averaged over the pairs")


if __name__ == "__main__":
    main()
