"""The vectorised paths equal straightforward reference implementations of the same maths
(same features, same hash family), written here with plain Python loops."""

from __future__ import annotations

import random

import numpy as np
import xxhash

from pgdedup.features import Features, FeatureSpec, features
from pgdedup.hashing import _BASE, mix64, seeded, word_hashes
from pgdedup.normalise import normalise, spaced
from pgdedup.signatures import kperm_signatures, signatures

M64 = (1 << 64) - 1


def ref_token_hash(token: str, seed: int) -> int:
    """Polynomial over the UTF-8 bytes, length in the top byte, then seeded splitmix64."""
    h = 0
    raw = token.encode("utf-8")
    for byte in raw:
        h = (h * int(_BASE) + byte) & M64
    h ^= (len(raw) << 56) & M64
    return int(seeded(np.array([h], dtype=np.uint64), seed, salt=0)[0])


def ref_bin(h: int, k: int) -> int:
    return ((h >> 32) * k) >> 32


def ref_oph(hashes: list[int], k: int, seed: int) -> list[int]:
    """OPH with optimal densification, one document, loops only."""
    hs = [int(v) for v in seeded(np.array(hashes, dtype=np.uint64), seed, salt=2)] if hashes else []
    bins: list[int | None] = [None] * k
    for h in hs:
        b, v = ref_bin(h, k), h & 0xFFFFFFFF
        bins[b] = v if bins[b] is None else min(bins[b], v)
    if not hs:
        return [0] * k
    out = list(bins)
    for i in range(k):
        attempt = 1
        while out[i] is None:
            probe = ref_bin(int(seeded(np.array([i * (1 << 20) + attempt], dtype=np.uint64), seed, salt=3)[0]), k)
            if bins[probe] is not None:
                out[i] = bins[probe]
            attempt += 1
    return out  # type: ignore[return-value]


def test_word_hashes_equal_reference():
    rng = random.Random(5)
    vocab = ["a", "bb", "héllo", "世", "x" * 40, "日本", "🎉", "z"]
    docs = [" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 30))) for _ in range(50)]
    units, lengths = word_hashes([spaced(normalise(d)) for d in docs], 9)
    expected = [ref_token_hash(t, 9) for d in docs for t in spaced(normalise(d)).split()]
    assert units.tolist() == expected
    assert lengths.tolist() == [len(spaced(normalise(d)).split()) for d in docs]


def _random_docs(seed: int, vocab: int, max_words: int, count: int) -> tuple[Features, list[np.ndarray]]:
    """Features of random texts (empty ones included) and each document's own hash slice."""
    rng = random.Random(seed)
    texts = [" ".join(f"w{rng.randint(0, vocab)}" for _ in range(rng.randint(0, max_words))) for _ in range(count)]
    feats = features([normalise(t) for t in texts], FeatureSpec(), 3)
    return feats, [feats.hashes[feats.offsets[i]:feats.offsets[i + 1]] for i in range(count)]


def test_oph_equals_reference():
    feats, docs = _random_docs(11, 300, 400, 40)
    fast = signatures(feats, 64, 3)
    for i, doc in enumerate(docs):
        assert fast[i].tolist() == ref_oph(doc.tolist(), 64, 3)


def test_kperm_equals_reference():
    feats, docs = _random_docs(12, 100, 60, 20)
    fast = kperm_signatures(feats, 40, 3)
    for i, doc in enumerate(docs):
        for p in range(40):
            if len(doc) == 0:
                assert fast[i, p] == 0
                continue
            key = np.uint64((p * 0x9E3779B97F4A7C15) & M64)
            assert fast[i, p] == min(int(v) >> 32 for v in seeded(doc ^ key, 3, salt=4))


def test_text_hash_is_xxh3():
    from pgdedup.hashing import text_hash
    assert text_hash("abc") == xxhash.xxh3_64_intdigest(b"abc") - (1 << 63)
    assert mix64(np.array([0], dtype=np.uint64))[0] == 0  # splitmix64's finaliser fixes 0
