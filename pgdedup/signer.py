"""From texts to signatures and band buckets, for a whole chunk at once, without any database.

This is the one code path that turns text into what pgdedup stores: the loader, ``similar
--text``, the tests and the benchmarks all call it, so they agree by construction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from .bands import band_buckets
from .features import blocks, features
from .hashing import partition_salts, salted, text_hash
from .normalise import normalise
from .params import Params
from .signatures import signatures


@dataclass
class SignedChunk:
    """Per text: hash of the normalised text, feature-set size, signature and band buckets.

    Rows with ``feature_counts == 0`` (NULL or empty text) have no signature: their row of
    ``signatures`` is meaningless and they get no band buckets.
    """

    text_hashes: np.ndarray  # int64 (n,)
    feature_counts: np.ndarray  # int64 (n,)
    signatures: np.ndarray  # uint32 (n, num_perm)
    buckets: np.ndarray  # int64 (n, bands)

    def __len__(self) -> int:
        return len(self.text_hashes)

    def signature(self, i: int) -> np.ndarray:
        """Signature of text i as int32 values (what ``pgdedup.similar_to`` takes; the stored
        sketch keeps their low 16 bits), empty for an empty feature set."""
        if self.feature_counts[i] == 0:
            return np.empty(0, dtype=np.int32)
        return self.signatures[i].view(np.int32)


def sign_texts(texts: Iterable[str | None], params: Params | None = None,
               partitions: Sequence[str | None] | None = None) -> SignedChunk:
    """Signatures and band buckets of ``texts`` (None allowed) with ``params`` (default Params()).

    With ``partitions`` (one value per text, None a value too), text hashes and buckets are
    salted with the text's partition value: texts of different partitions never share a bucket,
    so they are never candidates, and equal texts in two partitions are two texts. Signatures,
    hence similarities, do not change.
    """
    params = params or Params()
    normalised = [normalise(t) for t in texts]
    counts, sigs = [], []
    for start, end in blocks(normalised):  # cache-sized arrays (see features.features)
        feats = features(normalised[start:end], params.spec, params.seed)
        counts.append(feats.distinct_counts())
        sigs.append(signatures(feats, params.num_perm, params.seed))
    sig = np.concatenate(sigs) if sigs else np.zeros((0, params.num_perm), dtype=np.uint32)
    buckets = band_buckets(sig, params.bands, params.rows, params.seed)
    salts = None if partitions is None else partition_salts(partitions)
    hashes = text_hashes(normalised, salts)
    if salts is not None:
        buckets = salted(buckets, salts[:, None])
    return SignedChunk(text_hashes=hashes, feature_counts=np.concatenate(counts) if counts else np.zeros(0, dtype=np.int64),
                       signatures=sig, buckets=buckets)


def text_hashes(normalised: Sequence[str], salts: np.ndarray | None = None) -> np.ndarray:
    """The stored text hash of each normalised text: xxh3, salted with its partition value's
    salt (``hashing.partition_salts``) when the collection is partitioned. Equal hashes mean the
    same text, so the same feature set (to 64 bits)."""
    hashes = np.fromiter(map(text_hash, normalised), dtype=np.int64, count=len(normalised))
    return hashes if salts is None else salted(hashes, salts)
