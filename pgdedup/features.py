"""Feature sets: word or character n-gram shingles, as 64-bit hashes, for a chunk of texts at once.

Step 4 of the default feature set (docs/features.md): the features of a text are the SET of its n-gram
shingles; a text with 1..n-1 units has exactly one shingle (all of them); an empty text has none.

A shingle's hash is a fold of its units' hashes (tokens: a polynomial hash of their bytes, see
hashing.token_hashes; characters: mixed code points),
so two texts with the same shingle set get the same hashes. The fold runs in numpy over the
whole chunk: n vector steps, whatever the number of documents or shingles.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from .errors import InvalidArgument
from .hashing import mix64, seeded, word_hashes
from .normalise import spaced

Unit = Literal["word", "char"]

_P = np.uint64(0x100000001B3)


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

    def distinct_counts(self) -> np.ndarray:
        """Number of distinct shingles per document (the size of its feature set)."""
        if not len(self.hashes):
            return np.zeros(len(self), dtype=np.int64)
        # Document number in the top 24 bits, hash in the low 40: one sort finds distinct pairs.
        # Two different shingles of one document share 40 bits with probability ~2**-40.
        key = (self.doc_index().astype(np.uint64) << np.uint64(40)) | (self.hashes >> np.uint64(24))
        key.sort()
        first = np.ones(len(key), dtype=bool)
        first[1:] = key[1:] != key[:-1]
        return np.bincount((key[first] >> np.uint64(40)).astype(np.int64), minlength=len(self))


def _fold(units: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Hash of the unit tuples ``units[s:s+l]`` for each (s, l), all l in 1..n, vectorised.

    Nearly all shingles have the full length n, so they are folded without masks; only the
    single shingle of each short document (1..n-1 units) takes the masked path.
    """
    n = int(lengths.max(initial=0))
    out = np.empty(len(starts), dtype=np.uint64)
    full = lengths == n
    for mask, masked in ((full, False), (~full, True)):
        st, ln = starts[mask], lengths[mask]
        h = mix64(ln.astype(np.uint64))
        for j in range(int(ln.max(initial=0))):
            idx = np.where(j < ln, st + j, 0) if masked else st + j
            step = (((h << np.uint64(31)) | (h >> np.uint64(33))) ^ units[idx]) * _P
            h = np.where(j < ln, step, h) if masked else step
        out[mask] = mix64(h)
    return out


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


def features(normalised_texts: list[str], spec: FeatureSpec, seed: int) -> Features:
    """Shingle hashes of already normalised texts (see ``normalise.normalise``)."""
    if spec.unit == "word":
        units, lengths = word_hashes([spaced(t) for t in normalised_texts], seed)
    else:
        encoded = [t.encode("utf-32-le") for t in normalised_texts]
        lengths = np.fromiter((len(b) // 4 for b in encoded), dtype=np.int64, count=len(encoded))
        code_points = np.frombuffer(b"".join(encoded), dtype=np.uint32)
        units = seeded(code_points, seed, salt=1)
    return _shingles(units, lengths, spec.ngram)
