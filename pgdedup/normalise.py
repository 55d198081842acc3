"""Text normalisation and tokenisation: steps 1-3 of the default feature set (docs/features.md).

1. ``unicodedata.normalize("NFKC", text)`` then ``.casefold()``;
2. every run of Unicode whitespace becomes one ASCII space, both ends stripped;
3. tokens are the space-separated words, and in addition every character of a script written
   without spaces (Han, kana, Thai, Lao, Khmer, Myanmar, ...) is a token of its own.

``str.split()`` with no argument splits on exactly the characters ``re`` calls ``\\s`` (both use
``str.isspace``), so ``" ".join(text.split())`` is step 2 at C speed. An ASCII text (most
texts; NFKC leaves ASCII alone) takes a faster path through bytes: one ``translate`` lowers its
letters (``casefold`` of ASCII is ``lower``) and turns its ten whitespace characters into
spaces, then only runs of spaces are collapsed. Splitting made one string object per word:
measured on 5,000 feed texts of ~2.5 KB, 18.6 µs a text that way, ~11 µs this way.
"""

from __future__ import annotations

import re
import unicodedata

#: Characters of scripts written without spaces between words; each becomes its own token.
_SPACELESS = re.compile(
    "["
    "\u0e00-\u0e7f"  # Thai
    "\u0e80-\u0eff"  # Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u3005-\u3007"  # 々 〆 〇
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U000323af"  # CJK extensions B-H
    "]"
)


#: For ASCII bytes: letters to lower case, the characters ``str.isspace`` calls whitespace
#: (tab, line feed, vertical tab, form feed, carriage return, the four separators
#: 0x1c-0x1f, space) to spaces.
_ASCII_WHITESPACE = b"\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"
_ASCII_FOLD = bytes.maketrans(bytes(range(65, 91)) + _ASCII_WHITESPACE,
                              bytes(range(97, 123)) + b" " * len(_ASCII_WHITESPACE))
_SPACE_RUNS = re.compile(b"  +")


def normalise(text: str | None) -> str:
    """Steps 1-2: NFKC, casefold, whitespace runs to one space, stripped. ``None`` gives ``""``."""
    if not text:
        return ""
    if text.isascii():  # NFKC leaves ASCII unchanged, and casefold is lower
        folded = text.encode("ascii").translate(_ASCII_FOLD)
        if b"  " in folded:
            folded = _SPACE_RUNS.sub(b" ", folded)
        return folded.strip(b" ").decode("ascii")
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def spaced(normalised: str) -> str:
    """The normalised text with spaces around every spaceless-script character, so that its
    tokens are exactly its space-separated words (runs of spaces may occur)."""
    if not normalised.isascii() and _SPACELESS.search(normalised):
        return _SPACELESS.sub(r" \g<0> ", normalised)
    return normalised


def tokens(normalised: str) -> list[str]:
    """Step 3: the tokens of an already normalised text."""
    return spaced(normalised).split()
