"""Straightforward reference implementations of the default feature set, for the tests to
compare the vectorised code with (docs/features.md, "The default feature set").

Written from the definition, without importing anything from pgdedup: normalisation with
``unicodedata`` and ``re``, tokens by a character loop, shingles and Jaccard with Python sets.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable

#: Blocks of the scripts written without spaces (docs/features.md, step 3): every character in
#: them is a token of its own. Taken from the Unicode block chart, one line per block.
SPACELESS_BLOCKS = (
    (0x0E00, 0x0E7F),  # Thai
    (0x0E80, 0x0EFF),  # Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x3005, 0x3007),  # 々 〆 〇 (ideographic iteration mark, closing mark, number zero)
    (0x3040, 0x309F),  # Hiragana
    (0x30A0, 0x30FF),  # Katakana
    (0x31F0, 0x31FF),  # Katakana Phonetic Extensions
    (0x3400, 0x4DBF),  # CJK Unified Ideographs Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0x20000, 0x323AF),  # CJK Extensions B … H (planes 2 and 3, with the compatibility supplement)
)


def ref_normalise(text: str | None) -> str:
    """Steps 1-2: NFKC, casefold, every run of whitespace to one space, both ends stripped."""
    if not text:
        return ""
    text = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"\s+", " ", text).strip(" ")


def is_spaceless(c: str) -> bool:
    return any(lo <= ord(c) <= hi for lo, hi in SPACELESS_BLOCKS)


def ref_tokens(normalised: str) -> list[str]:
    """Step 3: the words between single spaces, each spaceless-script character a token."""
    out: list[str] = []
    word = ""
    for c in normalised:
        if c == " " or is_spaceless(c):
            if word:
                out.append(word)
            word = ""
            if c != " ":
                out.append(c)
        else:
            word += c
    if word:
        out.append(word)
    return out


def ref_word_shingles(text: str | None, n: int = 5) -> set[str]:
    """The set of word n-grams; 1..n-1 tokens give one shingle of all of them; empty, none."""
    toks = ref_tokens(ref_normalise(text))
    if not toks:
        return set()
    if len(toks) < n:
        return {" ".join(toks)}
    return {" ".join(toks[i:i + n]) for i in range(len(toks) - n + 1)}


def ref_char_shingles(text: str | None, n: int = 5) -> set[str]:
    """The set of character n-grams of the normalised text (spaces included)."""
    s = ref_normalise(text)
    if not s:
        return set()
    if len(s) < n:
        return {s}
    return {s[i:i + n] for i in range(len(s) - n + 1)}


def ref_jaccard(a: set, b: set) -> float:
    """Step 5: |A ∩ B| / |A ∪ B|, and 0 when either set is empty."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def ref_join(*columns: str | None) -> str:
    """Several text columns: joined with a newline, NULLs skipped."""
    return "\n".join(c for c in columns if c is not None)


def ref_sketch(signature: Iterable[int]) -> str:
    """A signature as stored (``bit varying``, read back as text): the low 16 bits of each
    value, in order, most significant bit first; '' for an empty signature."""
    return "".join(format(int(v) & 0xFFFF, "016b") for v in signature)


def ref_lanes(sketch: str) -> list[int]:
    """The 16-bit values of a stored sketch read back as text (``ref_sketch`` inverted)."""
    return [int(sketch[i:i + 16], 2) for i in range(0, len(sketch), 16)]
