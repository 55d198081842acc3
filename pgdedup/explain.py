"""``pgdedup explain``: why two rows were (or were not) judged near-duplicates.

The stored signatures give the estimate and the bands in which the two rows share a bucket
(``pgdedup.explain`` in SQL, sql/0012); the source text, read again and shingled with the
collection's own settings, gives the exact Jaccard, the features the rows share and own, and a
word-level diff of the two normalised texts, cut after ``MAX_DIFFS`` differences.
"""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, field
from typing import Any

from .collections import get, stored_result
from .connection import Db, session
from .db import guard_source, source_texts
from .errors import RowNotFound, translated
from .exact import common, jaccard
from .features import features
from .normalise import normalise, tokens

#: At most this many differing stretches in the diff, each cut to ``MAX_WORDS`` words a side.
MAX_DIFFS = 10
MAX_WORDS = 12


@dataclass
class Explanation:
    """What pgdedup knows about a pair of rows; ``verdict`` says how the default (verify auto)
    decides it."""

    name: str
    key_a: str
    key_b: str
    estimate: float
    exact: float
    threshold: float
    features_a: int
    features_b: int
    shared: int
    only_a: int
    only_b: int
    bands: int
    shared_bands: list[int]
    ambiguous: tuple[float, float]
    diff: list[dict[str, Any]] = field(default_factory=list)
    more_differences: int = 0
    same_text: bool = False
    max_bucket: int = 100
    capped_bands: list[int] = field(default_factory=list)

    @property
    def candidate(self) -> bool:
        """Whether LSH makes them a candidate pair (they share a bucket in some band)."""
        return bool(self.shared_bands)

    @property
    def verdict(self) -> str:
        lo, hi = self.ambiguous
        if self.same_text:
            return "duplicates: the same text (equal texts are always duplicates, whatever the estimate)"
        if not self.candidate:
            return "not a candidate (no band in common): never compared"
        if self.estimate >= hi:
            verdict = "duplicates: the estimate is above the ambiguous band"
        elif self.estimate < lo:
            verdict = "not duplicates: the estimate is below the ambiguous band"
        else:
            side = "duplicates" if self.exact >= self.threshold else "not duplicates"
            verdict = f"{side}: the estimate is ambiguous, the exact Jaccard decides"
        if len(self.capped_bands) == len(self.shared_bands):
            return (f"compared only if one of them is among the first {self.max_bucket} texts of a shared bucket "
                    f"(in keep order; every bucket they share holds more than {self.max_bucket}: --max-bucket); "
                    f"if compared, {verdict}")
        return verdict

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "candidate": self.candidate, "verdict": self.verdict}

    def summary(self) -> str:
        lo, hi = self.ambiguous
        lines = [
            f"{self.name}: {self.key_a} and {self.key_b}",
            f"  estimate {self.estimate:.4f}, exact Jaccard {self.exact:.4f} (threshold {self.threshold}; "
            + (f"estimates in [{lo:.3f}, {hi:.3f}) are checked exactly)" if hi <= 1 else
             f"estimates from {lo:.3f} up are checked exactly)"),
            f"  features: {self.features_a} and {self.features_b}; {self.shared} shared, "
            f"{self.only_a} only in {self.key_a}, {self.only_b} only in {self.key_b}",
            f"  bands in common: {len(self.shared_bands)} of {self.bands}"
            + (f" ({', '.join(map(str, self.shared_bands))})" if self.shared_bands else "")
            + ("" if not self.capped_bands else
               f"; each holds over {self.max_bucket} texts" if self.capped_bands == self.shared_bands else
               f"; over {self.max_bucket} texts: {', '.join(map(str, self.capped_bands))}"),
            f"  verdict: {self.verdict}",
        ]
        if self.diff:
            lines.append("  differences (normalised words):")
            for d in self.diff:
                lines.append(f"    at word {d['at']}: -[{' '.join(d['a'])}] +[{' '.join(d['b'])}]")
            if self.more_differences:
                lines.append(f"    … and {self.more_differences} more")
        return "\n".join(lines)


def _word_diff(a: str, b: str) -> tuple[list[dict[str, Any]], int]:
    """The first ``MAX_DIFFS`` differing stretches of two normalised texts, by word, and how many more."""
    wa, wb = tokens(a), tokens(b)
    ops = [op for op in difflib.SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes() if op[0] != "equal"]
    shown = [{"at": i1, "a": wa[i1:i2][:MAX_WORDS], "b": wb[j1:j2][:MAX_WORDS]} for _, i1, i2, j1, j2 in ops[:MAX_DIFFS]]
    return shown, max(0, len(ops) - MAX_DIFFS)


#: The texts of the buckets a row shares with another, by band (1-based), for the bands asked:
#: a bucket of more than max_bucket texts is capped (its members are paired with its first
#: max_bucket only), as pgdedup.shared_buckets counts them (one row per text).
_BUCKET_TEXTS = """
SELECT u.band::integer, count(DISTINCT g.text_hash)
FROM pgdedup.signatures a
CROSS JOIN LATERAL unnest(a.buckets) WITH ORDINALITY AS u(bucket, band)
JOIN pgdedup.band_keys y ON y.collection_id = a.collection_id AND y.band = u.band - 1 AND y.bucket = u.bucket
JOIN pgdedup.signatures g ON g.collection_id = a.collection_id AND g.row_id = y.row_id
WHERE a.collection_id = %(c)s AND a.row_key = %(k)s AND u.band = ANY (%(bands)s)
GROUP BY u.band ORDER BY u.band"""


def explain(name: str, key_a: str, key_b: str, *, max_bucket: int | None = None, dsn: Db = None) -> Explanation:
    """Explain the pair of rows ``key_a``, ``key_b`` of collection ``name``.

    Two rows with the same text (its stored hash) are always duplicates. Two rows that share a
    bucket in some band are a candidate pair, unless every bucket they share holds more than
    ``max_bucket`` texts (as dedupe's and pairs' ``max_bucket``): its members are then paired
    with its first ``max_bucket`` texts only, in the run's keep order, which the verdict names.
    ``max_bucket`` None: the one the collection's stored result was decided with (in place
    first), else dedupe's default, 100.

    Raises:
        CollectionNotFound, SourceMissing: no such collection, or its source table is gone.
        RowNotFound: a key the collection (or the source table) does not have.
        InvalidArgument: ``max_bucket`` below 1.
    """
    with translated(), session(dsn, f"pgdedup explain {name}") as s:
        conn = s.conn
        coll = get(conn, name)
        if max_bucket is None:
            stored = stored_result(conn, coll.id)
            max_bucket = stored.max_bucket if stored else 100
        conn.execute("SELECT pgdedup.check_args(%s, %s)", (coll.params.threshold, max_bucket))
        guard_source(conn, coll.source, name)  # (need_source's check, made under the table's lock)
        est, count_a, count_b, bands, shared_bands, lo, hi, threshold = conn.execute(
            "SELECT * FROM pgdedup.explain(%s, %s::text, %s::text)", (name, str(key_a), str(key_b))).fetchone()
        src = coll.source
        keys = [conn.execute("SELECT pgdedup.key_text(%s, %s)", (coll.id, str(k))).fetchone()[0] for k in (key_a, key_b)]
        same_text = conn.execute(
            "SELECT count(DISTINCT text_hash) = 1 FROM pgdedup.signatures WHERE collection_id = %s AND row_key = ANY (%s)",
            (coll.id, keys)).fetchone()[0]
        capped = [band for band, texts in conn.execute(_BUCKET_TEXTS, {"c": coll.id, "k": keys[0], "bands": list(shared_bands)})
                  if texts > max_bucket]
        texts = source_texts(conn, src, keys)
    missing = [k for k in keys if k not in texts]
    if missing:
        raise RowNotFound(f"the source table {src.label} has no row with key {missing[0]!r} any more")
    norm = [normalise(texts[k]) for k in keys]
    sets = features(norm, coll.params.spec, coll.params.seed).distinct()
    fa, fb = (sets.hashes[sets.offsets[i]:sets.offsets[i + 1]] for i in (0, 1))
    shared = common(fa, fb)
    diff, more = _word_diff(norm[0], norm[1])
    return Explanation(name, keys[0], keys[1], est, jaccard(fa, fb), threshold, count_a, count_b, shared, len(fa) - shared, len(fb) - shared, bands,
                       list(shared_bands), (lo, hi), diff, more, same_text, max_bucket, capped)
