"""Normalisation, tokenisation and n-gram feature sets (docs/features.md, "The default feature set").

Pure Python, no database. The feature hashes are checked against straightforward reference
implementations of the shingle sets written here.
"""

from __future__ import annotations

import math
import re
import unicodedata
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pgdedup.features as features_module
from pgdedup.features import Features, FeatureSpec, features
from pgdedup.normalise import normalise, tokens
from reference import SPACELESS_BLOCKS, ref_char_shingles, ref_normalise, ref_tokens, ref_word_shingles

SEED = 1
ALL_WHITESPACE = [chr(c) for c in range(0x110000) if chr(c).isspace()]

# --------------------------------------------------------------------------------------------
# normalise()
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw,expected",
    [
        ("ＡＢＣ", "abc"),  # full-width letters (NFKC)
        ("ｈｅｌｌｏ　ｗｏｒｌｄ", "hello world"),  # full-width letters and ideographic space
        ("ﬁle", "file"),  # ligature (NFKC)
        ("ﬀ ﬂ", "ff fl"),
        ("Straße", "strasse"),  # casefold, not lower()
        ("STRASSE", "strasse"),
        ("ΣΊΣΥΦΟΣ", "σίσυφοσ"),  # casefold has no final sigma
        ("Ⅻ ①", "xii 1"),  # compatibility characters
        ("e\u0301", "\u00e9"),  # combining acute composes under NFKC
        ("E\u0301TE\u0301", "\u00e9t\u00e9"),
        ("ｶﾞｷﾞ", "ガギ"),  # half-width katakana with voiced mark compose to full width
        ("a\u00a0b", "a b"),  # NBSP
        ("a\u00a0\u00a0\u00a0b", "a b"),
        ("a\t\tb", "a b"),
        ("a\n\r\nb\n", "a b"),
        ("a\u3000\u3000b", "a b"),  # ideographic space run
        ("  \t\n a \u2003\u2009 b \u00a0\u3000 ", "a b"),  # mixed runs, both ends stripped
        ("Hello 😀 World 👍🏽", "hello 😀 world 👍🏽"),  # emoji kept
        ("😀", "😀"),
        ("", ""),
        (None, ""),
        ("   ", ""),
        ("\u3000\u00a0\t\n", ""),
        ("Plain ASCII, with Punctuation!", "plain ascii, with punctuation!"),
        ("\x1cA\x1d\x1e\x1fB\x0b\x0cC\r", "a b c"),  # ASCII's other whitespace: the separators, VT, FF
        ("A  B   C\n\n D \t", "a b c d"),
        ("@[Z]`{", "@[z]`{"),  # only A-Z change case
    ],
)
def test_normalise_examples(raw: str | None, expected: str) -> None:
    assert normalise(raw) == expected


@pytest.mark.parametrize("ws", ALL_WHITESPACE, ids=lambda c: f"U+{ord(c):04X}")
def test_normalise_every_unicode_whitespace_collapses(ws: str) -> None:
    assert normalise(f"a{ws}b") == "a b"
    assert normalise(f"{ws}a{ws}{ws} {ws}b{ws}") == "a b"
    assert normalise(ws * 3) == ""


def _reference_normalise(text: str) -> str:
    """docs/features.md steps 1-2, literally."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"\s+", " ", text).strip(" ")


_NORMALISE_ALPHABET = st.one_of(
    st.characters(codec="utf-8"),
    st.sampled_from(ALL_WHITESPACE),
    st.sampled_from(list("ＡＢＣﬁﬂßẞİΣς\u0301\u0308ｶﾞÅÅ①Ⅻ😀")),
)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_NORMALISE_ALPHABET, max_size=40))
def test_normalise_matches_design_reference(text: str) -> None:
    out = normalise(text)
    assert out == _reference_normalise(text)
    assert out == out.strip()
    assert "  " not in out
    assert all(c == " " or not c.isspace() for c in out)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.one_of(st.characters(max_codepoint=127),
                                  st.sampled_from([c for c in ALL_WHITESPACE if c.isascii()])), max_size=60))
def test_normalise_ascii_path_matches_design_reference(text: str) -> None:
    """ASCII texts take normalise's bytes path (translate, then collapse runs of spaces)."""
    assert normalise(text) == _reference_normalise(text)


# --------------------------------------------------------------------------------------------
# tokens()
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "normalised,expected",
    [
        ("hello世界", ["hello", "世", "界"]),
        ("世界hello", ["世", "界", "hello"]),
        ("ab 中文cd", ["ab", "中", "文", "cd"]),
        ("日本語のテキスト", ["日", "本", "語", "の", "テ", "キ", "ス", "ト"]),
        ("ひらがな", ["ひ", "ら", "が", "な"]),
        ("カタカナ", ["カ", "タ", "カ", "ナ"]),
        ("ไทย", ["ไ", "ท", "ย"]),
        ("ภาษาไทย test", ["ภ", "า", "ษ", "า", "ไ", "ท", "ย", "test"]),
        ("𠀀𠀁", ["𠀀", "𠀁"]),  # CJK extension B (astral)
        ("the quick brown fox", ["the", "quick", "brown", "fox"]),
        ("hello 한국어 world", ["hello", "한국어", "world"]),  # Hangul is written with spaces
        ("a", ["a"]),
        ("", []),
    ],
)
def test_tokens_examples(normalised: str, expected: list[str]) -> None:
    assert tokens(normalised) == expected


# Characters of scripts written without spaces (each must be its own token) and of scripts
# written with spaces (runs stay one word); all are stable under NFKC + casefold.
_SPACELESS_RANGES = [
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0x3400, 0x4DBF),  # CJK extension A
    (0x20000, 0x2A6DF),  # CJK extension B
    (0x3041, 0x3096),  # hiragana letters
    (0x30A1, 0x30FA),  # katakana letters
    (0x0E01, 0x0E2E),  # Thai consonants
    (0x1780, 0x17A2),  # Khmer consonants
    (0x1000, 0x1020),  # Myanmar consonants
]
_SPACELESS = st.one_of(*(st.integers(lo, hi).map(chr) for lo, hi in _SPACELESS_RANGES))
_SPACED_CHARS = list("abcdefghijklmnopqrstuvwxyz0123456789éàüñøабвгдежзαβγδ") + [
    chr(c) for c in range(0xAC00, 0xAC40)  # Hangul syllables
]


def _is_spaceless(c: str) -> bool:
    return any(lo <= ord(c) <= hi for lo, hi in _SPACELESS_RANGES)


def _reference_tokens(normalised: str) -> list[str]:
    out: list[str] = []
    for piece in normalised.split(" "):
        run = ""
        for c in piece:
            if _is_spaceless(c):
                if run:
                    out.append(run)
                    run = ""
                out.append(c)
            else:
                run += c
        if run:
            out.append(run)
    return out


@st.composite
def _mixed_script_text(draw: st.DrawFn) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 15))):
        if draw(st.booleans()):
            parts.append(draw(_SPACELESS))
        else:
            parts.append(draw(st.text(alphabet=st.sampled_from(_SPACED_CHARS), min_size=1, max_size=6)))
        parts.append(draw(st.sampled_from(["", "", " ", "  ", "\t", "\u3000", "\u00a0"])))
    return "".join(parts)


@settings(max_examples=200, deadline=None)
@given(_mixed_script_text())
def test_tokens_split_spaceless_scripts(text: str) -> None:
    s = normalise(text)
    toks = tokens(s)
    assert toks == _reference_tokens(s)
    assert all(t and " " not in t for t in toks)
    assert "".join(toks) == s.replace(" ", "")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=40))
def test_tokens_lose_and_invent_nothing(text: str) -> None:
    s = normalise(text)
    toks = tokens(s)
    assert all(t and " " not in t for t in toks)
    assert "".join(toks) == s.replace(" ", "")
    if s.isascii():
        assert toks == (s.split(" ") if s else [])


_ANY_TEXT = st.text(alphabet=st.one_of(
    st.characters(codec="utf-8"),
    st.sampled_from(ALL_WHITESPACE),
    *(st.integers(lo, hi).map(chr) for lo, hi in SPACELESS_BLOCKS),
), max_size=40)


@settings(max_examples=300, deadline=None)
@given(_ANY_TEXT)
def test_normalise_and_tokens_match_reference_module(text: str) -> None:
    """tests/reference.py (which imports nothing from pgdedup) agrees on steps 1-3, for any text,
    including every block of the spaceless scripts."""
    assert normalise(text) == ref_normalise(text)
    assert tokens(normalise(text)) == ref_tokens(ref_normalise(text))


# --------------------------------------------------------------------------------------------
# features(): reference shingle sets
# --------------------------------------------------------------------------------------------


REFERENCE = {"word": ref_word_shingles, "char": ref_char_shingles}


def doc_hashes(feats: Features, i: int) -> np.ndarray:
    return feats.hashes[feats.offsets[i]:feats.offsets[i + 1]]


def hash_set(feats: Features, i: int) -> frozenset[int]:
    return frozenset(doc_hashes(feats, i).tolist())


VOCAB = [
    "a", "b", "c", "the", "cat", "sat", "on", "mat", "x1", "42",
    "Straße", "STRASSE", "strasse", "ＡＢＣ", "abc", "ﬁle", "file",
    "e\u0301te\u0301", "été", "naïve", "ΣΊΣΥΦΟΣ", "σίσυφος", "Ⅻ", "xii", "①",
    "hello世界", "世", "界", "日本語", "ひらがな", "ｶﾀｶﾅ", "ไทย", "한국어",
    "😀", "👍🏽", "İstanbul",
]
SEPARATORS = [" ", " ", " ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2003", ""]


@st.composite
def texts(draw: st.DrawFn) -> str | None:
    if draw(st.integers(0, 30)) == 0:
        return draw(st.sampled_from([None, "", "  \t\u3000 "]))
    if draw(st.integers(0, 5)) == 0:
        return draw(st.text(alphabet=st.characters(codec="utf-8"), max_size=60))
    words = draw(st.lists(st.sampled_from(VOCAB), max_size=40))
    out = [draw(st.sampled_from(["", "", " ", "\n"]))]
    for w in words:
        out.append(w.upper() if draw(st.integers(0, 4)) == 0 else w)
        out.append(draw(st.sampled_from(SEPARATORS)))
    return "".join(out)


def _check_chunk_against_reference(raw: list[str | None], unit: str, n: int) -> None:
    spec = FeatureSpec(unit, n)
    normed = [normalise(t) for t in raw]
    feats = features(normed, spec, SEED)
    refs = [REFERENCE[unit](t, n) for t in raw]

    # CSR structure
    assert len(feats) == len(raw)
    assert feats.offsets[0] == 0 and feats.offsets[-1] == len(feats.hashes)
    assert np.all(np.diff(feats.offsets) >= 0)
    assert feats.hashes.dtype == np.uint64

    # the number of distinct hashes is the size of the shingle set
    np.testing.assert_array_equal(feats.distinct_counts(), [len(r) for r in refs])
    sets = feats.distinct()
    for i, ref in enumerate(refs):
        assert np.unique(doc_hashes(feats, i)).size == len(ref)
        np.testing.assert_array_equal(doc_hashes(sets, i), np.unique(doc_hashes(feats, i)))

    # equal shingle sets <=> equal hash sets (no collisions, no spurious differences)
    sets = [hash_set(feats, i) for i in range(len(raw))]
    for i in range(len(raw)):
        for j in range(i + 1, len(raw)):
            assert (sets[i] == sets[j]) == (refs[i] == refs[j]), (raw[i], raw[j])

    # a document's hashes do not depend on the rest of the chunk
    reordered = features(normed[::-1], spec, SEED)
    for i, t in enumerate(normed):
        alone = features([t], spec, SEED)
        assert hash_set(alone, 0) == sets[i]
        assert hash_set(reordered, len(normed) - 1 - i) == sets[i]


@settings(max_examples=150, deadline=None)
@given(st.lists(texts(), min_size=1, max_size=6), st.integers(1, 6))
def test_word_features_match_reference(raw: list[str | None], n: int) -> None:
    _check_chunk_against_reference(raw, "word", n)


@settings(max_examples=150, deadline=None)
@given(st.lists(texts(), min_size=1, max_size=6), st.integers(1, 6))
def test_char_features_match_reference(raw: list[str | None], n: int) -> None:
    _check_chunk_against_reference(raw, "char", n)


@settings(max_examples=100, deadline=None)
@given(st.lists(texts(), min_size=1, max_size=12), st.integers(1, 80), st.sampled_from(["word", "char"]))
def test_features_do_not_depend_on_the_block_size(raw: list[str | None], block: int, unit: str) -> None:
    """A chunk is computed in blocks of about BLOCK_CHARS characters (texts never split): its
    hashes are exactly those of each text computed alone, in order, whatever the block size."""
    spec = FeatureSpec(unit, 3)  # type: ignore[arg-type]
    normed = [normalise(t) for t in raw]
    with patch.object(features_module, "BLOCK_CHARS", block):
        chunk = features(normed, spec, SEED)
    alone = [features([t], spec, SEED) for t in normed]
    np.testing.assert_array_equal(np.diff(chunk.offsets), [len(a.hashes) for a in alone])
    np.testing.assert_array_equal(chunk.hashes, np.concatenate([a.hashes for a in alone]))


@st.composite
def periodic_pair(draw: st.DrawFn, unit: str) -> tuple[str, str, int]:
    """Two different texts with the same shingle set: repetitions of one pattern.

    Every window of length n of a sequence with period L longer than n + L - 1 is one of the
    L windows starting in the first period, so any two such repetitions have equal sets.
    """
    n = draw(st.integers(1, 6))
    pattern = " ".join(draw(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=4)))
    if unit == "word":
        period = len(tokens(normalise(pattern)))
        need = math.ceil((n + period - 1) / period)
    else:
        period = len(normalise(pattern)) + 1  # the pattern plus one separating space
        need = math.ceil((n + period) / period)
    seps = st.sampled_from([" ", "  ", "\t", "\n", "\u00a0", "\u3000"])

    def repeat(times: int) -> str:
        out = []
        for _ in range(times):
            out.append(pattern.upper() if draw(st.booleans()) else pattern)
            out.append(draw(seps))
        return "".join(out)

    first, second = draw(st.lists(st.integers(need, need + 4), min_size=2, max_size=2, unique=True))
    return repeat(first), repeat(second), n


@pytest.mark.parametrize("unit", ["word", "char"])
def test_equal_shingle_sets_give_equal_hash_sets(unit: str) -> None:
    @settings(max_examples=100, deadline=None)
    @given(periodic_pair(unit))
    def check(pair: tuple[str, str, int]) -> None:
        a, b, n = pair
        ref = REFERENCE[unit]
        assert ref(a, n) == ref(b, n)  # the construction is right
        assert normalise(a) != normalise(b)  # and the texts really differ
        feats = features([normalise(a), normalise(b)], FeatureSpec(unit, n), SEED)
        assert hash_set(feats, 0) == hash_set(feats, 1)
        np.testing.assert_array_equal(feats.distinct_counts(), [len(ref(a, n))] * 2)

    check()


@pytest.mark.parametrize("unit", ["word", "char"])
def test_features_examples(unit: str) -> None:
    spec = FeatureSpec(unit, 3)
    raw = ["a b c d", "A  B\tC\u00a0D", "b c d a", "a b", "", "a b c d a b c"]
    feats = features([normalise(t) for t in raw], spec, SEED)
    counts = feats.distinct_counts().tolist()
    assert counts == [len(REFERENCE[unit](t, 3)) for t in raw]
    assert hash_set(feats, 0) == hash_set(feats, 1)  # same normalised text
    assert hash_set(feats, 4) == frozenset()
    if unit == "word":
        assert counts == [2, 2, 2, 1, 0, 4]
        # "b c d" is shared by "a b c d" and "b c d a"
        assert len(hash_set(feats, 0) & hash_set(feats, 2)) == 1
        # "a b c d a b c" contains both shingles of "a b c d"
        assert hash_set(feats, 0) <= hash_set(feats, 5)


def test_features_depend_on_seed() -> None:
    normed = [normalise("the quick brown fox jumps over the lazy dog")]
    for unit in ("word", "char"):
        a = features(normed, FeatureSpec(unit, 2), seed=1)
        b = features(normed, FeatureSpec(unit, 2), seed=2)
        assert hash_set(a, 0).isdisjoint(hash_set(b, 0))
        assert a.distinct_counts().tolist() == b.distinct_counts().tolist()


def test_features_of_empty_texts() -> None:
    feats = features(["", "", ""], FeatureSpec("word", 5), SEED)
    assert len(feats) == 3 and len(feats.hashes) == 0
    assert feats.distinct_counts().tolist() == [0, 0, 0]
    feats = features(["", "abc", ""], FeatureSpec("char", 5), SEED)
    assert feats.distinct_counts().tolist() == [0, 1, 0]
    assert feats.doc_index().tolist() == [1]


def test_short_text_is_one_shingle_distinct_from_longer_ones() -> None:
    """A 2-token text's single shingle must not equal any shingle of a longer text."""
    feats = features(["a b", "a b c", "x a b"], FeatureSpec("word", 3), SEED)
    assert feats.distinct_counts().tolist() == [1, 1, 1]
    assert len({hash_set(feats, i) for i in range(3)}) == 3


# --------------------------------------------------------------------------------------------
# FeatureSpec
# --------------------------------------------------------------------------------------------


def test_feature_spec_defaults() -> None:
    spec = FeatureSpec()
    assert (spec.unit, spec.ngram) == ("word", 5)


@pytest.mark.parametrize("unit", ["words", "token", "", "WORD", "Char", None, 1])
def test_feature_spec_rejects_bad_unit(unit: object) -> None:
    with pytest.raises(ValueError, match=re.escape(f"unit must be 'word' or 'char', not {unit!r}")):
        FeatureSpec(unit, 5)  # type: ignore[arg-type]


@pytest.mark.parametrize("ngram", [0, -1, -5, 65, 1000])
def test_feature_spec_rejects_bad_ngram(ngram: int) -> None:
    with pytest.raises(ValueError, match=rf"^ngram must be between 1 and 64, not {ngram}$"):
        FeatureSpec("word", ngram)


@pytest.mark.parametrize("unit,ngram", [("word", 1), ("word", 64), ("char", 1), ("char", 64)])
def test_feature_spec_accepts_bounds(unit: str, ngram: int) -> None:
    spec = FeatureSpec(unit, ngram)  # type: ignore[arg-type]
    assert (spec.unit, spec.ngram) == (unit, ngram)
