"""Edge cases of parameters and inputs that once slipped through."""

from __future__ import annotations

import numpy as np
import pytest

import pgdedup

from pgdedup import Params, sign_texts
from pgdedup.bands import optimal_bands
from pgdedup.features import FeatureSpec
from pgdedup.normalise import tokens


def test_low_threshold_gets_a_valid_band_threshold():
    # max(0.04 - 0.15, 0.04 / 2) = max(-0.11, 0.02) = 0.02; at 0.02 the brute-force (and
    # datasketch) choice for k = 128 is 82 bands of 1 row (tests/test_bands.py, PARAMS_TABLE)
    p = Params(threshold=0.04)
    assert p.band_threshold == 0.02
    assert (p.bands, p.rows) == (82, 1)


def test_low_threshold_bands_are_the_brute_force_choice():
    """82 × 1 at 0.02: brute force over every (b, r) with b·r <= 128, each cost a midpoint-rule
    integral (4000 nodes per side) of an S-curve written out here."""
    t, nodes = 0.02, 4000
    x_lo = (np.arange(nodes) + 0.5) * (t / nodes)
    x_hi = t + (np.arange(nodes) + 0.5) * ((1 - t) / nodes)
    costs = {}
    for b in range(1, 129):
        for r in range(1, 128 // b + 1):
            fp = np.sum(1 - (1 - x_lo**r) ** b) * (t / nodes)
            fn = np.sum((1 - x_hi**r) ** b) * ((1 - t) / nodes)
            costs[(b, r)] = (fp + fn) / 2
    assert min(costs, key=costs.get) == (82, 1) == optimal_bands(t, 128)


@pytest.mark.parametrize("bands,rows,message", [
    (-1, -1, "bands must be a positive integer, not -1"),
    (-2, 5, "bands must be a positive integer, not -2"),
    (3, 2.5, "rows must be a positive integer, not 2.5"),
    (200, 0, "rows must be a positive integer, not 0"),  # 0 is not "the default"
    (0, 0, "bands must be a positive integer, not 0"),
    (200, None, "bands and rows are given together, or neither"),
    (True, 4, "bands must be a positive integer, not True"),
])
def test_bad_bands_and_rows_are_refused(bands, rows, message):
    with pytest.raises(pgdedup.InvalidArgument) as info:
        Params(bands=bands, rows=rows)
    assert str(info.value) == message


@pytest.mark.parametrize("ngram", [2.5, True, 0])
def test_bad_ngram_is_refused(ngram):
    with pytest.raises(ValueError) as info:
        FeatureSpec("word", ngram)
    assert str(info.value) == f"ngram must be between 1 and 64, not {ngram}"


def test_empty_chunk_and_single_feature_rows():
    empty = sign_texts([])
    assert empty.signatures.shape == (0, 128) and empty.buckets.shape == (0, Params().bands)
    one = sign_texts(["just three words", "just three words", "other three words"])
    assert list(one.feature_counts) == [1, 1, 1]
    assert (one.signature(0) == one.signature(1)).all()
    assert len(set(one.signature(0).tolist())) == 1  # one feature fills every bin
    assert not (one.signature(0) == one.signature(2)).any()


def test_cjk_extension_h_is_split():
    assert tokens("a\U00031350\U00031351b") == ["a", "\U00031350", "\U00031351", "b"]
