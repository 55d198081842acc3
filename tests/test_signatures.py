"""MinHash signatures (one-permutation hashing + optimal densification) and the Jaccard estimate.

Pure Python, no database. Feature sets are built directly from random 64-bit integers, so the
exact Jaccard similarity of every pair is known.

Standard error. For k positions, k-permutation MinHash has variance J(1-J)/k. One-permutation
hashing is no worse for sets of at least ~k features; for smaller sets, features that share a
bin hide each other, which adds at most about another J(1-J)/k (measured: variance x1.5-2 for unions of
2..20 features). The bounds below therefore use ``2 J(1-J)/k`` for unions smaller than k and
``J(1-J)/k`` otherwise. For a union of just 2 features the error has a heavy tail (when both
land in one bin, which happens with probability 1/k, the estimate is exactly 0 or 1), so the
per-pair bound is only asserted for unions of at least 3; such pairs still count in the mean.
"""

from __future__ import annotations

import itertools
from unittest.mock import patch

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import pgdedup.features as features_module
from pgdedup.features import Features
from pgdedup.hashing import mix64
from pgdedup.params import Params
from pgdedup.signatures import estimate, signatures
from pgdedup.signer import sign_texts
from reference import ref_word_shingles

K = 128
SEED = 1


def as_hashes(ints) -> np.ndarray:
    """uint64 feature hashes of python ints (mixed, as real shingle hashes would be)."""
    return mix64(np.array([int(i) & (2**64 - 1) for i in ints], dtype=np.uint64))


def chunk(sets: list[np.ndarray]) -> Features:
    offsets = np.zeros(len(sets) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in sets], out=offsets[1:])
    hashes = np.concatenate([np.asarray(s, dtype=np.uint64) for s in sets]) if sets else np.zeros(0, np.uint64)
    return Features(offsets=offsets, hashes=hashes)


def variance_bound(j: np.ndarray, union: np.ndarray, k: int = K) -> np.ndarray:
    return np.where(union < k, 2.0, 1.0) * j * (1 - j) / k


def random_pair(rng: np.random.Generator, lo: int, hi: int) -> tuple[list[int], list[int]]:
    """Two non-empty sets of random ints, union size in [lo, hi], Jaccard spread over [0, 1]."""
    u = int(rng.integers(lo, hi + 1))
    inter = int(round(rng.uniform(0, 1) * u))
    rest = u - inter
    if inter == 0:  # disjoint: each side needs at least one element
        u, rest = max(u, 2), max(u, 2)
        a_only = int(rng.integers(1, rest))
    else:
        a_only = int(rng.integers(0, rest + 1))
    pool: set[int] = set()
    while len(pool) < u:
        pool.update(int(x) for x in rng.integers(0, 2**64, size=u, dtype=np.uint64))
    items = list(pool)[:u]
    both, only_a, only_b = items[:inter], items[inter:inter + a_only], items[inter + a_only:]
    return both + only_a, only_b + both


def exact_jaccard(a, b) -> float:
    sa, sb = set(a), set(b)
    if not sa or not sb:
        return 0.0
    return len(sa & sb) / len(sa | sb)


# --------------------------------------------------------------------------------------------
# Unbiasedness and accuracy
# --------------------------------------------------------------------------------------------


def test_estimator_unbiased_over_many_pairs() -> None:
    rng = np.random.default_rng(20240601)
    pairs = []
    for regime in [(1, 20)] * 300 + [(20, 300)] * 150 + [(300, 2000)] * 150:
        pairs.append(random_pair(rng, *regime))
    # a few exact extremes
    for size in (1, 5, 200):
        items = list({int(x) for x in rng.integers(0, 2**64, size=2 * size, dtype=np.uint64)})
        a, b = items[:size], items[size:]
        pairs.append((a, list(reversed(a))))  # J = 1
        pairs.append((a, b))  # J = 0

    sets = []
    for a, b in pairs:
        sets += [as_hashes(a), as_hashes(b)]
    sig = signatures(chunk(sets), K, SEED)
    assert sig.shape == (len(sets), K) and sig.dtype == np.uint32

    est = np.array([estimate(sig[2 * i], sig[2 * i + 1]) for i in range(len(pairs))])
    j = np.array([exact_jaccard(a, b) for a, b in pairs])
    union = np.array([len(set(a) | set(b)) for a, b in pairs])
    assert j.min() == 0.0 and j.max() == 1.0 and np.histogram(j, bins=5, range=(0, 1))[0].min() > 50

    var = variance_bound(j, union)
    err = est - j
    # unbiased: the mean error is within 3 standard errors of the mean
    assert abs(err.mean()) <= 3 * np.sqrt(var.mean() / len(pairs)), err.mean()
    # the same separately for small sets, where densification does most of the work
    small = union <= 40
    assert small.sum() > 200
    assert abs(err[small].mean()) <= 3 * np.sqrt(var[small].mean() / small.sum()), err[small].mean()
    # precision: the mean squared error is not larger than the variance bound (with slack for
    # the sampling noise of a mean of squares over ~600 pairs)
    assert np.mean(err**2) <= 1.5 * var.mean()
    # every single estimate is within 6 standard errors (+ one position of rounding)
    checked = union >= 3
    bound = 6 * np.sqrt(var) + 1 / K
    bad = np.flatnonzero(checked & (np.abs(err) > bound))
    assert bad.size == 0, [(j[i], est[i], union[i]) for i in bad[:5]]
    # exact cases are exact
    assert np.all(est[j == 1.0] == 1.0)
    assert np.all(est[j == 0.0] <= 1 / K)


@st.composite
def set_pairs(draw: st.DrawFn) -> tuple[list[int], list[int]]:
    """Small sets A, B: each distinct int goes to A only, B only or both."""
    items = draw(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=60, unique=True))
    where = draw(st.lists(st.sampled_from("ABX"), min_size=len(items), max_size=len(items)))
    a = [x for x, w in zip(items, where) if w in "AX"]
    b = [x for x, w in zip(items, where) if w in "BX"]
    return a, b


@settings(max_examples=200, deadline=None)
@given(set_pairs(), st.integers(0, 2**31 - 1))
def test_estimate_property_small_sets(pair: tuple[list[int], list[int]], seed: int) -> None:
    a, b = pair
    assume(a and b)
    sig = signatures(chunk([as_hashes(a), as_hashes(b)]), K, seed)
    est = estimate(sig[0], sig[1])
    j = exact_jaccard(a, b)
    union = len(set(a) | set(b))
    assert 0.0 <= est <= 1.0
    if j == 1.0:
        assert est == 1.0
    elif j == 0.0:
        assert est <= 1 / K
    elif union >= 5:
        sd = np.sqrt(variance_bound(np.array(j), np.array(union)))
        assert abs(est - j) <= 8 * sd + 2 / K, (j, est, union)


# --------------------------------------------------------------------------------------------
# Exact properties
# --------------------------------------------------------------------------------------------


def test_identical_sets_identical_signatures() -> None:
    rng = np.random.default_rng(1)
    for size in (1, 2, 7, 50, 127, 128, 129, 1000):
        h = as_hashes(rng.integers(0, 2**64, size=size, dtype=np.uint64))
        sig = signatures(chunk([h, h.copy(), as_hashes(rng.integers(0, 2**64, size=size, dtype=np.uint64))]), K, SEED)
        np.testing.assert_array_equal(sig[0], sig[1])
        assert estimate(sig[0], sig[1]) == 1.0
        assert estimate(sig[0], sig[2]) <= 1 / K  # disjoint random sets


def test_signature_depends_only_on_the_set() -> None:
    rng = np.random.default_rng(2)
    for size in (1, 3, 30, 300):
        h = as_hashes(rng.integers(0, 2**64, size=size, dtype=np.uint64))
        shuffled = rng.permutation(h)
        duplicated = rng.permutation(np.concatenate([h, rng.choice(h, size=size * 2)]))
        sig = signatures(chunk([h, shuffled, duplicated]), K, SEED)
        np.testing.assert_array_equal(sig[0], sig[1])
        np.testing.assert_array_equal(sig[0], sig[2])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=80, unique=True), st.randoms(use_true_random=False),
       st.integers(0, 2**31 - 1))
def test_signature_invariant_under_shuffle_and_duplicates(items: list[int], rnd, seed: int) -> None:
    variant = items + [rnd.choice(items) for _ in range(rnd.randint(0, 40))]
    rnd.shuffle(variant)
    sig = signatures(chunk([as_hashes(items), as_hashes(variant)]), K, seed)
    np.testing.assert_array_equal(sig[0], sig[1])


def test_signature_independent_of_chunk() -> None:
    rng = np.random.default_rng(3)
    sets = [as_hashes(rng.integers(0, 2**64, size=s, dtype=np.uint64)) for s in (1, 4, 0, 90, 500, 0, 2)]
    together = signatures(chunk(sets), K, SEED)
    for i, s in enumerate(sets):
        alone = signatures(chunk([s]), K, SEED)
        np.testing.assert_array_equal(alone[0], together[i])


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(alphabet="abcd \n", max_size=60)), min_size=1, max_size=15),
       st.integers(1, 200))
def test_sign_texts_of_a_chunk_equal_each_text_signed_alone(texts: list[str | None], block: int) -> None:
    """sign_texts works through blocks of about BLOCK_CHARS characters: whatever their size,
    each text's hash, feature count, signature and buckets are those it gets on its own."""
    with patch.object(features_module, "BLOCK_CHARS", block):
        chunk_signed = sign_texts(texts)
    for i, text in enumerate(texts):
        alone = sign_texts([text])
        assert chunk_signed.text_hashes[i] == alone.text_hashes[0]
        assert chunk_signed.feature_counts[i] == alone.feature_counts[0]
        np.testing.assert_array_equal(chunk_signed.signatures[i], alone.signatures[0])
        np.testing.assert_array_equal(chunk_signed.buckets[i], alone.buckets[0])


def test_empty_sets() -> None:
    rng = np.random.default_rng(4)
    full = as_hashes(rng.integers(0, 2**64, size=10, dtype=np.uint64))
    sig = signatures(chunk([np.zeros(0, np.uint64), full, np.zeros(0, np.uint64)]), K, SEED)
    assert np.all(sig[0] == 0) and np.all(sig[2] == 0)
    np.testing.assert_array_equal(sig[1], signatures(chunk([full]), K, SEED)[0])
    assert np.any(sig[1] != 0)
    # an empty signature is similar to nothing, not even another empty one
    empty = np.empty(0, dtype=np.int32)
    assert estimate(empty, sig[1]) == 0.0
    assert estimate(sig[1], empty) == 0.0
    assert estimate(empty, empty) == 0.0

    signed = sign_texts([None, "", "  \t\u3000 ", "one two three four five six"])
    assert signed.feature_counts.tolist() == [0, 0, 0, 2]
    for i in range(3):
        s = signed.signature(i)
        assert s.size == 0 and s.dtype == np.int32
        assert estimate(s, signed.signature(3)) == 0.0
        assert np.all(signed.signatures[i] == 0)
    s3 = signed.signature(3)
    assert s3.dtype == np.int32 and s3.shape == (128,)
    np.testing.assert_array_equal(s3.view(np.uint32), signed.signatures[3])
    assert estimate(s3, s3) == 1.0


def test_determinism_and_seed() -> None:
    rng = np.random.default_rng(5)
    sets = [as_hashes(rng.integers(0, 2**64, size=s, dtype=np.uint64)) for s in (1, 5, 60, 400)]
    a = signatures(chunk(sets), K, 7)
    b = signatures(chunk([s.copy() for s in sets]), K, 7)
    np.testing.assert_array_equal(a, b)
    c = signatures(chunk(sets), K, 8)
    for i in range(len(sets)):
        # a different seed is a different hash family: (almost) every position changes
        assert np.mean(a[i] == c[i]) < 0.05, i

    texts = ["the quick brown fox jumps over the lazy dog again and again", "short", None]
    s1, s2 = sign_texts(texts), sign_texts(list(texts))
    np.testing.assert_array_equal(s1.signatures, s2.signatures)
    np.testing.assert_array_equal(s1.buckets, s2.buckets)
    np.testing.assert_array_equal(s1.text_hashes, s2.text_hashes)
    s3 = sign_texts(texts, Params(seed=2))
    assert np.mean(s1.signatures[0] == s3.signatures[0]) < 0.05
    assert not np.any(s1.buckets[0] == s3.buckets[0])


def test_num_perm_sets_the_width() -> None:
    rng = np.random.default_rng(6)
    h = as_hashes(rng.integers(0, 2**64, size=100, dtype=np.uint64))
    for k in (8, 64, 200, 256):
        sig = signatures(chunk([h, h]), k, SEED)
        assert sig.shape == (2, k)
        assert estimate(sig[0], sig[1]) == 1.0


# --------------------------------------------------------------------------------------------
# sign_texts end to end
# --------------------------------------------------------------------------------------------


def _edited(words: list[str], fraction: float, rng: np.random.Generator, fresh) -> list[str]:
    out = list(words)
    for pos in rng.choice(len(words), size=int(round(fraction * len(words))), replace=False):
        out[pos] = next(fresh)
    return out


def test_sign_texts_estimates_word_5gram_jaccard() -> None:
    rng = np.random.default_rng(7)
    vocab = [f"w{i}" for i in range(5000)]
    fresh = (f"new{i}" for i in itertools.count())
    cases = []
    for fraction in (0.0, 0.005, 0.01, 0.02, 0.04, 0.07, 0.1, 0.15, 0.25, 0.5):
        words = list(rng.choice(vocab, size=300))
        a = _edited(words, fraction / 2, rng, fresh)
        b = _edited(words, fraction / 2, rng, fresh)
        # some layout noise that normalisation removes
        text_a = " ".join(a)
        text_b = "\n".join(w.upper() if i % 7 == 0 else w for i, w in enumerate(b))
        cases.append((text_a, text_b))
    js = []
    for seed in (1, 2):
        params = Params(seed=seed)
        signed = sign_texts([t for pair in cases for t in pair], params)
        for i, (ta, tb) in enumerate(cases):
            sa, sb = ref_word_shingles(ta), ref_word_shingles(tb)
            assert signed.feature_counts[2 * i] == len(sa)
            assert signed.feature_counts[2 * i + 1] == len(sb)
            j = len(sa & sb) / len(sa | sb)
            est = estimate(signed.signature(2 * i), signed.signature(2 * i + 1))
            se = np.sqrt(j * (1 - j) / params.num_perm)
            assert abs(est - j) <= 4 * se + 1 / params.num_perm, (seed, j, est)
            js.append(j)
    assert min(js) < 0.2 and max(js) == 1.0 and len({round(j, 2) for j in js}) >= 8


def test_sign_texts_exact_duplicates_after_normalisation() -> None:
    a = "The  Quick brown\tfox — jumps over the ＬＡＺＹ dog, Straße ﬁve"
    b = "the quick brown fox — jumps over the lazy dog, strasse five "
    c = "the quick brown fox — jumps over the lazy cat, strasse five"
    signed = sign_texts([a, b, c])
    assert signed.text_hashes[0] == signed.text_hashes[1] != signed.text_hashes[2]
    np.testing.assert_array_equal(signed.signatures[0], signed.signatures[1])
    np.testing.assert_array_equal(signed.buckets[0], signed.buckets[1])
    assert estimate(signed.signature(0), signed.signature(2)) < 1.0
    assert len(signed) == 3


def test_sign_texts_short_texts() -> None:
    """Texts with fewer than n tokens have one shingle: equal iff their tokens are equal."""
    signed = sign_texts(["hello world", "Hello   WORLD", "hello there", "hello"])
    assert signed.feature_counts.tolist() == [1, 1, 1, 1]
    assert estimate(signed.signature(0), signed.signature(1)) == 1.0
    assert estimate(signed.signature(0), signed.signature(2)) <= 1 / 128
    assert estimate(signed.signature(0), signed.signature(3)) <= 1 / 128
