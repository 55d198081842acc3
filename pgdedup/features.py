"""Feature sets: word or character n-gram shingles, as 64-bit hashes, for a chunk of texts at once.

Step 4 of the default feature set (docs/features.md): the features of a text are the SET of its n-gram
shingles; a text with 1..n-1 units has exactly one shingle (all of them); an empty text has none.

A shingle's hash is a fold of its units' hashes (tokens: a polynomial hash of their bytes, see
hashing.token_hashes; characters: mixed code points),
so two texts with the same shingle set get the same hashes. The fold runs in numpy over a
block of texts at a time: n vector steps, whatever the number of documents or shingles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from .errors import InvalidArgument
from .hashing import BLOCK_CHARS, mix64, seeded, word_hashes
from .normalise import spaced

Unit = Literal["word", "char"]

_P = np.uint64(0x100000001B3)
_R31, _R33 = np.uint64(31), np.uint64(33)


@dataclass(frozen=True)
class FeatureSpec:
    """How texts become feature sets. Stored with a collection; changing it forces a re-index."""

    unit: Unit = "word"
    ngram: int = 5

    def __post_init__(self) -> None:
        if self.unit not in ("word", "char"):
            raise InvalidArgument(f"unit must be 'word' or 'char', not {self.unit!r}")
        if isinstance(self.ngram, bool) or not isinstance(self.ngram, int) or not 1 <= self.ngram <= 64:
            raise InvalidArgument(f"ngram must be between 1 and 64, not {self.ngram}")


@dataclass
class Features:
    """Shingle hashes of a chunk, CSR style: document i owns ``hashes[offsets[i]:offsets[i+1]]``.

    A document's hashes may repeat (a shingle seen twice); consumers treat them as a set.
    """

    offsets: np.ndarray  # int64, len n+1
    hashes: np.ndarray  # uint64

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def doc_index(self) -> np.ndarray:
        """The document number of every hash."""
        return np.repeat(np.arange(len(self), dtype=np.int64), np.diff(self.offsets))

    def distinct(self) -> "Features":
        """The same documents, each one's hashes sorted and without repeats (its feature set).

        Documents are sorted one by one: a chunk's documents hold a few hundred hashes each,
        and ~5,000 small sorts cost a fifth of one sort of the whole chunk by a (document,
        hash) key (measured: 30 against 130 ms for 5,000 texts of ~2.7 KB).
        """
        hashes = self.hashes.copy()
        bounds = self.offsets.tolist()
        for start, end in zip(bounds, bounds[1:]):
            hashes[start:end].sort()
        first = np.ones(len(hashes), dtype=bool)
        first[1:] = hashes[1:] != hashes[:-1]
        first[self.offsets[:-1][np.diff(self.offsets) > 0]] = True  # a document's first hash
        offsets = np.zeros(len(self) + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.doc_index()[first], minlength=len(self)), out=offsets[1:])
        return Features(offsets=offsets, hashes=hashes[first])

    def distinct_counts(self) -> np.ndarray:
        """Number of distinct shingles per document (the size of its feature set)."""
        return np.diff(self.distinct().offsets)


def _slide(units: np.ndarray, n: int) -> np.ndarray:
    """The fold of every run of n consecutive units, ``units[i:i+n]`` for i in 0..len-n, in
    place over slices: n vector steps without gathers (runs across two documents are made too,
    and dropped by the caller)."""
    m = len(units) - n + 1
    h0 = mix64(np.array([n], dtype=np.uint64))[0]
    h = units[:m] ^ ((h0 << _R31) | (h0 >> _R33))
    h *= _P
    rotated = np.empty_like(h)
    for j in range(1, n):
        np.left_shift(h, _R31, out=rotated)
        h >>= _R33
        h |= rotated
        h ^= units[j:j + m]
        h *= _P
    return h


def _fold(units: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Hash of the unit tuples ``units[s:s+l]`` for each (s, l), all l in 1..n, vectorised:
    h = mix64(l), then h = (rotl(h, 31) ^ unit) * P for each unit, then mix64(h).

    Nearly all shingles have the full length n: they are picked from the folds of every run of
    n units (``_slide``); only the single shingle of each short document (1..n-1 units) takes
    the masked path.
    """
    n = int(lengths.max(initial=0))
    out = np.empty(len(starts), dtype=np.uint64)
    if not len(starts):
        return out
    full = lengths == n
    out[full] = _slide(units, n)[starts[full]]
    st, ln = starts[~full], lengths[~full]
    h = mix64(ln.astype(np.uint64))
    for j in range(int(ln.max(initial=0))):
        idx = np.where(j < ln, st + j, 0)
        step = (((h << _R31) | (h >> _R33)) ^ units[idx]) * _P
        h = np.where(j < ln, step, h)
    out[~full] = h
    return mix64(out)


def _shingles(units: np.ndarray, lengths: np.ndarray, n: int) -> Features:
    """n-gram shingle hashes from the unit hashes of each document laid end to end."""
    offsets_in = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets_in[1:])
    per_doc = np.where(lengths >= n, lengths - n + 1, np.minimum(lengths, 1))
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(per_doc, out=offsets[1:])
    doc = np.repeat(np.arange(len(lengths), dtype=np.int64), per_doc)
    # k-th shingle of a document starts at its k-th unit; short documents have one, of all units
    starts = offsets_in[:-1][doc] + (np.arange(offsets[-1], dtype=np.int64) - offsets[:-1][doc])
    size = np.minimum(lengths, n)[doc]
    return Features(offsets=offsets, hashes=_fold(units, starts, size))


def features(normalised_texts: Sequence[str], spec: FeatureSpec, seed: int) -> Features:
    """Shingle hashes of already normalised texts (see ``normalise.normalise``).

    Computed for blocks of consecutive texts of about ``hashing.BLOCK_CHARS`` characters, so
    that each step's arrays stay in cache (5,000 texts of ~2.7 KB: 138-157 ms with the shingles
    folded over the whole chunk and the words hashed in blocks of 2**20 characters, 97-103 ms
    so); a text is never split, so the result does not depend on the block size.
    """
    parts = [_block_features(normalised_texts[start:end], spec, seed) for start, end in blocks(normalised_texts)]
    if not parts:
        return Features(offsets=np.zeros(1, dtype=np.int64), hashes=np.empty(0, dtype=np.uint64))
    if len(parts) == 1:  # (sign_texts passes one block at a time: no copy)
        return parts[0]
    bases = np.cumsum([0] + [int(p.offsets[-1]) for p in parts[:-1]])
    return Features(offsets=np.concatenate([np.zeros(1, dtype=np.int64)] +
                                           [p.offsets[1:] + base for p, base in zip(parts, bases)]),
                    hashes=np.concatenate([p.hashes for p in parts]))


def blocks(texts: Sequence[str]) -> list[tuple[int, int]]:
    """(start, end) of consecutive runs of texts of about ``BLOCK_CHARS`` characters together
    (a longer text is a block of its own)."""
    bounds, start, size = [], 0, 0
    for i, text in enumerate(texts):
        size += len(text) + 1
        if size >= BLOCK_CHARS:
            bounds.append((start, i + 1))
            start, size = i + 1, 0
    if start < len(texts):
        bounds.append((start, len(texts)))
    return bounds


def _block_features(normalised_texts: Sequence[str], spec: FeatureSpec, seed: int) -> Features:
    """``features`` of one block."""
    if spec.unit == "word":
        units, lengths = word_hashes([spaced(t) for t in normalised_texts], seed)
    else:
        encoded = [t.encode("utf-32-le") for t in normalised_texts]
        lengths = np.fromiter((len(b) // 4 for b in encoded), dtype=np.int64, count=len(encoded))
        code_points = np.frombuffer(b"".join(encoded), dtype=np.uint32)
        units = seeded(code_points, seed, salt=1)
    return _shingles(units, lengths, spec.ngram)
