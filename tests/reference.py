"""Straightforward reference implementations of the default feature set, for the tests to
compare the vectorised code with (docs/features.md, "The default feature set")."""

from __future__ import annotations

from pgdedup.normalise import normalise, tokens


def ref_word_shingles(text: str | None, n: int = 5) -> set[str]:
    """The set of word n-grams; 1..n-1 tokens give one shingle of all of them; empty, none."""
    toks = tokens(normalise(text))
    if not toks:
        return set()
    if len(toks) < n:
        return {" ".join(toks)}
    return {" ".join(toks[i:i + n]) for i in range(len(toks) - n + 1)}


def ref_char_shingles(text: str | None, n: int = 5) -> set[str]:
    """The set of character n-grams of the normalised text (spaces included)."""
    s = normalise(text)
    if not s:
        return set()
    if len(s) < n:
        return {s}
    return {s[i:i + n] for i in range(len(s) - n + 1)}
