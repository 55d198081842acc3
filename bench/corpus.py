"""A deterministic corpus of base documents, near-duplicate variants and unrelated documents.

``make_corpus(n, seed)`` returns ``n`` texts (doc ``i`` gets key ``i + 1``), shuffled. About half are
variants of a base document. Texts are English-like: 300-500 words in sentences, drawn from a
vocabulary of ~4,000 words (common English words first, then pseudo-words) with a Zipf
distribution (weight 1 / rank). A variant is made from its base (or from an earlier variant of
the same base, so sibling pairs spread the similarities further) by:

* word edits: insertions, deletions and substitutions at a rate from 0.5 % to 15 % of the words
  (mostly 0.5-3 %, the rates that put 5-gram Jaccard in [0.75, 0.95]);
* or an excerpt: a contiguous 55-98 % slice of the words (Jaccard about the kept fraction);
* or nothing but cosmetics;
then, independently, cosmetic changes that the default normalisation undoes (whitespace runs,
newlines and tabs, case changes, full-width letters, NBSP and em spaces, ligatures) and appended
boilerplate ("Updated 12:34 UTC", tracking URLs, "Share this article"). A few empty, blank and
very short texts are included too (empty texts are similar to nothing).
"""

from __future__ import annotations

import itertools
import random

_COMMON = (
    "the of and to a in that is for it on was with as he be at by this had not are but from or have an "
    "they which one you were her all she there would their we him been has when who will more no if out "
    "so said what up its about into than them can only other new some could time these two may then do "
    "first any my now such like our over man me even most made after also did many before must through "
    "years where much your way well down should because each just those people how too little state good "
    "very make world still own see men work long get here between both life being under never day same "
    "another know while last might us great old year off come since against go came right used take three "
    "city market council government report police company school week month plan water power health local"
).split()
_ONSETS = ("b", "c", "d", "f", "g", "h", "l", "m", "n", "p", "r", "s", "t", "v", "w", "br", "ch", "cl", "cr",
           "dr", "fl", "gr", "pl", "pr", "sh", "st", "th", "tr")
_VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "ee", "ou", "oo", "io")
_CODAS = ("", "", "n", "r", "s", "t", "l", "nd", "st", "ng", "rt", "m")
_SUFFIXES = ("", "", "", "s", "ed", "ing", "er", "ly", "tion", "ment", "ness")
BOILERPLATE = ("Updated {h:02d}:{m:02d} UTC",
               "Read more: https://news.example.com/story/{n}?utm_source=feed&utm_medium=rss", "Share this article", "https://t.example.co/{n}", "Copyright {y} Example Media. All rights reserved.",
               "Last modified {h}:{m:02d} GMT | Subscribe to our newsletter")
#: Edit rates of word-edit variants (repeats weight the rates that land near usual thresholds).
EDIT_RATES = (0.005, 0.01, 0.01, 0.015, 0.015, 0.02, 0.02, 0.025, 0.03, 0.04, 0.08, 0.15)


def vocabulary(rng: random.Random, size: int = 4000) -> list[str]:
    """Common English words, then distinct pseudo-words from syllables, in rank order."""
    words, seen = list(_COMMON), set(_COMMON)
    while len(words) < size:
        w = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
                    for _ in range(rng.choice((1, 1, 2, 2, 2, 3)))) + rng.choice(_SUFFIXES)
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


class _Writer:
    def __init__(self, rng: random.Random, length: tuple[int, int] = (300, 500)) -> None:
        self.rng = rng
        self.length = length
        self.vocab = vocabulary(rng)
        self.cum = list(itertools.accumulate(1.0 / r for r in range(1, len(self.vocab) + 1)))

    def words(self, k: int) -> list[str]:
        return self.rng.choices(self.vocab, cum_weights=self.cum, k=k)

    def document(self) -> list[str]:
        """300-500 words (``length``) in sentences: capitalised first word, '.' or ',' attached to words."""
        rng, out = self.rng, []
        target = rng.randint(*self.length)
        while len(out) < target:
            s = self.words(rng.randint(6, 22))
            s[0] = s[0].capitalize()
            if len(s) > 10 and rng.random() < 0.4:
                s[rng.randrange(3, len(s) - 3)] += ","
            s[-1] += "."
            out.extend(s)
        return out[:target]

    def edit(self, words: list[str], rate: float) -> list[str]:
        rng, w = self.rng, list(words)
        for _ in range(max(1, round(rate * len(words)))):
            i, op = rng.randrange(len(w)), rng.random()
            if op < 0.4:
                w[i] = self.words(1)[0]
            elif op < 0.7:
                w.insert(i, self.words(1)[0])
            elif len(w) > 10:
                del w[i]
        return w

    def cosmetic(self, text: str) -> str:
        """Changes the default normalisation undoes (NFKC, casefold, whitespace runs)."""
        rng, words = self.rng, text.split(" ")
        kind = rng.randrange(4)
        for i in range(len(words)):
            r = rng.random()
            if kind == 0 and r < 0.05:  # case
                words[i] = words[i].upper() if r < 0.025 else words[i].title()
            elif kind == 1 and r < 0.05:  # full-width letters / ligatures
                words[i] = "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in words[i])
            elif kind == 1 and r < 0.08:
                words[i] = words[i].replace("fi", "\ufb01").replace("fl", "\ufb02")
        seps = [" "] * (len(words) - 1)
        for i in range(len(seps)):
            if kind == 2 and rng.random() < 0.1:  # whitespace runs, newlines, tabs
                seps[i] = rng.choice(("  ", "\n", "\n\n", "\t", " \n "))
            elif kind == 3 and rng.random() < 0.1:  # NBSP, em space, thin space
                seps[i] = rng.choice(("\u00a0", "\u2003", "\u2009", " \u00a0 "))
        if kind == 0 and rng.random() < 0.2:
            return " ".join(words).upper()
        return "".join(w + s for w, s in zip(words, seps + [""]))

    def boilerplate(self, text: str) -> str:
        rng = self.rng
        line = rng.choice(BOILERPLATE).format(h=rng.randrange(24), m=rng.randrange(60), n=rng.randrange(10**6),
                                              y=rng.randrange(2015, 2026))
        return text + rng.choice(("\n", " ", "\n\n")) + line

    def variant(self, family: list[list[str]]) -> tuple[list[str], str]:
        """(words to derive further variants from, the variant's text)."""
        rng = self.rng
        parent = family[0] if len(family) == 1 or rng.random() < 0.7 else rng.choice(family[1:])
        kind = rng.random()
        if kind < 0.6:
            words = self.edit(parent, rng.choice(EDIT_RATES))
        elif kind < 0.75:
            keep = int(len(parent) * rng.uniform(0.55, 0.98))
            start = rng.randrange(len(parent) - keep + 1)
            words = parent[start:start + keep]
        else:
            words = list(parent)
        text = " ".join(words)
        if kind >= 0.75 or rng.random() < 0.25:
            text = self.cosmetic(text)
        if rng.random() < (0.5 if kind >= 0.75 else 0.2):
            text = self.boilerplate(text)
        return words, text


def make_corpus(n: int, seed: int = 42, length: tuple[int, int] = (300, 500)) -> list[str]:
    """``n`` texts of ``length`` words (the range of a base document's): ~half variants in
    families of 2-7 documents, the rest unrelated; shuffled."""
    rng = random.Random(seed)
    w = _Writer(rng, length)
    odd = ["", "   \n ", "Breaking news", "Breaking news", "BREAKING  NEWS", "Weather update for the city"]
    odd = odd[: max(0, min(len(odd), n // 100))]
    docs: list[str] = list(odd)
    variants_left = n // 2
    while len(docs) < n:
        base = w.document()
        docs.append(" ".join(base))
        size = min(rng.choice((1, 1, 1, 2, 2, 3, 4, 6)), variants_left, n - len(docs))
        family = [base]
        for _ in range(size):
            words, text = w.variant(family)
            family.append(words)
            docs.append(text)
        variants_left -= size
        if variants_left == 0:
            while len(docs) < n:  # the rest: unrelated documents
                docs.append(" ".join(w.document()))
    rng.shuffle(docs)
    return docs
