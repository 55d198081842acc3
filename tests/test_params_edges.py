"""Edge cases of parameters and inputs that once slipped through."""

from __future__ import annotations

import pytest

from pgdedup import Params, sign_texts
from pgdedup.bands import optimal_bands
from pgdedup.features import FeatureSpec
from pgdedup.normalise import tokens


def test_low_threshold_gets_a_valid_band_threshold():
    p = Params(threshold=0.04)
    assert 0 < p.band_threshold <= 0.04
    assert (p.bands, p.rows) == optimal_bands(p.band_threshold, p.num_perm)


@pytest.mark.parametrize("bands,rows", [(-1, -1), (-2, 5), (3, 2.5), (200, 0), (True, 4)])
def test_bad_bands_and_rows_are_refused(bands, rows):
    with pytest.raises(ValueError):
        Params(bands=bands, rows=rows)


@pytest.mark.parametrize("ngram", [2.5, True, 0])
def test_bad_ngram_is_refused(ngram):
    with pytest.raises(ValueError):
        FeatureSpec("word", ngram)


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
