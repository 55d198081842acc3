"""Hash functions shared by features, signatures and bands.

Tokens are hashed with xxhash (XXH3, 64 bit, seeded), once per distinct token of a chunk.
Everything downstream mixes 64-bit integers in numpy with the splitmix64 finaliser, a
bijection on 64 bits with full avalanche: cheap, vectorised and stable across platforms.
numpy's uint64 arithmetic wraps modulo 2**64, which is exactly what these mixers need.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import xxhash

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser of a uint64 array (a bijection, so distinct inputs stay distinct)."""
    z = x.astype(np.uint64, copy=True)
    z ^= z >> np.uint64(30)
    z *= _M1
    z ^= z >> np.uint64(27)
    z *= _M2
    z ^= z >> np.uint64(31)
    return z


def seeded(x: np.ndarray, seed: int, salt: int) -> np.ndarray:
    """A hash of ``x`` that depends on (seed, salt): independent families for independent jobs."""
    key = np.uint64((seed * 0x100000001B3 + salt * 0x9E3779B1) & 0xFFFFFFFFFFFFFFFF)
    return mix64(x.astype(np.uint64) * _GOLDEN + key)


def token_hashes(flat_tokens: Sequence[str], seed: int) -> np.ndarray:
    """xxh3-64 of every token, computed once per distinct token (a per-chunk vocabulary)."""
    vocab = dict.fromkeys(flat_tokens)
    for token in vocab:
        vocab[token] = xxhash.xxh3_64_intdigest(token.encode("utf-8"), seed)
    return np.fromiter(map(vocab.__getitem__, flat_tokens), dtype=np.uint64, count=len(flat_tokens))


def text_hash(normalised: str) -> int:
    """Signed 64-bit xxh3 of a normalised text: equal texts are exact duplicates."""
    return xxhash.xxh3_64_intdigest(normalised.encode("utf-8")) - (1 << 63)


def bucket_hashes(rows: Iterable[memoryview], seed: int) -> list[int]:
    """Signed 64-bit xxh3 of each band's bytes, so buckets are stable across runs and machines."""
    return [xxhash.xxh3_64_intdigest(row, seed) - (1 << 63) for row in rows]
