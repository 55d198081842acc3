"""Independent oracles for what the database holds and decides.

- Estimates made from the STORED signatures, in SQL (``pgdedup.similarity``), agree with the
  exact Jaccard of the feature sets computed by tests/reference.py (no pgdedup code), within a
  few standard errors, over many pairs (docs/features.md, "Signatures and the estimate").
- ``dedupe`` breaks ties in the keep order by the key, in the key type's own order.
"""

from __future__ import annotations

import itertools
import random
from datetime import datetime, timezone

import numpy as np
import pytest

import pgdedup
from reference import ref_jaccard, ref_join, ref_lanes, ref_word_shingles

K = 128
VOCAB = [f"w{i}" for i in range(5000)]


def _corpus(seed: int = 11) -> list[tuple[int, str | None, str | None]]:
    """(id, title, body): 16 stories of 150 words, each in 7 versions edited at different rates,
    so within-story pairs spread over J in (0, 1]; layout noise that normalisation removes."""
    rng = random.Random(seed)
    rows, n = [], 0
    for s in range(16):
        base = [rng.choice(VOCAB) for _ in range(150)]
        for rate in (0.0, 0.0, 0.005, 0.01, 0.02, 0.05, 0.12):
            words = [rng.choice(VOCAB) if rng.random() < rate else w for w in base]
            if rng.random() < 0.3:
                words = words[rng.randrange(10):]  # an excerpt
            body = " ".join(w.upper() if rng.random() < 0.1 else w for w in words)
            body = body.replace(" ", rng.choice([" ", "  ", "\n", "\u00a0"]), 20)
            title = None if n % 4 == 0 else f"story {s}"
            n += 1
            rows.append((n, title, body))
    return rows


def test_sql_estimates_agree_with_exact_jaccard(conn, dsn):
    rows = _corpus()
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, title text, body text)")
    conn.cursor().executemany("INSERT INTO docs VALUES (%s, %s, %s)", rows)
    pgdedup.index("docs", "id", ["title", "body"], dsn=dsn, progress=False)

    feats = {r[0]: ref_word_shingles(ref_join(r[1], r[2])) for r in rows}
    # every stored feature count is the size of the reference feature set
    counts = dict(conn.execute("SELECT row_key::int, feature_count FROM pgdedup.signatures").fetchall())
    assert counts == {k: len(v) for k, v in feats.items()}

    est = {(a, b): s for a, b, s in conn.execute(
        "SELECT a.row_key::int, b.row_key::int, pgdedup.similarity(a.signature, b.signature) "
        "FROM pgdedup.signatures a JOIN pgdedup.signatures b ON a.row_key::int < b.row_key::int").fetchall()}
    assert len(est) == len(rows) * (len(rows) - 1) // 2
    pairs = sorted(est)
    j = np.array([ref_jaccard(feats[a], feats[b]) for a, b in pairs])
    e = np.array([est[p] for p in pairs])
    assert np.all(e * K == np.round(e * K))  # a fraction of 128 positions
    # the corpus spreads J: identical, near, far and unrelated pairs
    assert j.max() == 1.0 and (j > 0.8).sum() >= 30 and ((j > 0.2) & (j < 0.6)).sum() >= 30

    var = j * (1 - j) / K  # feature sets here have >= 130 shingles: no small-set penalty
    err = e - j
    # unbiased: the mean error over all related pairs within 3 standard errors of the mean
    related = j > 0
    assert abs(err[related].mean()) <= 3 * np.sqrt(var[related].mean() / related.sum()), err[related].mean()
    # mean squared error no larger than the variance (plus sampling slack)
    assert np.mean(err[related] ** 2) <= 1.5 * var[related].mean()
    # every single pair within 5.5 standard errors, plus one position of rounding
    bad = np.flatnonzero(np.abs(err) > 5.5 * np.sqrt(var) + 1 / K)
    assert bad.size == 0, [(pairs[i], j[i], e[i]) for i in bad[:5]]
    # J = 1 is exact; unrelated stories agree in at most a position or two (32-bit minima)
    assert np.all(e[j == 1.0] == 1.0)
    assert np.all(e[j == 0.0] <= 2 / K)

    # the by-key form reads the same stored signatures
    for a, b in pairs[:40]:
        got = conn.execute("SELECT pgdedup.similarity('docs', %s, %s)", (str(a), str(b))).fetchone()[0]
        assert got == est[(a, b)]


def test_pairs_equal_brute_force_over_estimates(conn, dsn):
    """``pgdedup.pairs(0.5)`` returns exactly the pairs whose estimate reaches 0.5 AND that share
    a band (brute force over every pair of rows, from the stored buckets and signatures)."""
    rows = _corpus(seed=12)[:36]
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, title text, body text)")
    conn.cursor().executemany("INSERT INTO docs VALUES (%s, %s, %s)", rows)
    pgdedup.index("docs", "id", ["title", "body"], dsn=dsn, progress=False)
    stored = {int(k): (np.array(ref_lanes(s)), set(b)) for k, s, b in
              conn.execute("SELECT row_key, signature, buckets FROM pgdedup.signatures").fetchall()}
    expected = {}
    for a, b in itertools.combinations(sorted(stored), 2):
        (sa, ba), (sb, bb) = stored[a], stored[b]
        e = float(np.mean(sa == sb))
        if ba & bb and e >= 0.5:
            expected[(a, b)] = e
    got = {tuple(sorted((int(x), int(y)))): s for x, y, s in pgdedup.pairs("docs", threshold=0.5, dsn=dsn)}
    assert got == pytest.approx(expected)
    assert len(expected) >= 40


@pytest.mark.parametrize("key_type,small,large", [
    ("integer", 9, 10),      # text order would put "10" first: the key's own order must decide
    ("text", "a-row", "b-row"),
])
@pytest.mark.parametrize("smaller_first", [True, False], ids=["smaller-inserted-first", "larger-inserted-first"])
def test_dedupe_ties_broken_by_key(conn, dsn, key_type, small, large, smaller_first):
    """Two rows with identical keep-order values and identical text: the smaller key is kept and
    the other points at it, whichever was inserted first (docs/features.md: the key breaks every tie)."""
    text = " ".join(f"w{i}" for i in range(40))
    when = datetime(2024, 5, 1, tzinfo=timezone.utc)
    other_key = 1000 if key_type != "text" else "z-row"
    conn.execute(f"CREATE TABLE items (id {key_type} PRIMARY KEY, body text, published_at timestamptz)")
    order = [small, large] if smaller_first else [large, small]
    for k in order:
        conn.execute("INSERT INTO items VALUES (%s, %s, %s)", (k, text, when))
    # an unrelated, earlier row: kept, and not part of the tie
    conn.execute("INSERT INTO items VALUES (%s, %s, %s)",
                 (other_key, " ".join(f"v{i}" for i in range(40)), datetime(2024, 1, 1, tzinfo=timezone.utc)))
    pgdedup.index("items", "id", ["body"], dsn=dsn, progress=False)
    result = pgdedup.dedupe("items", keep_order="published_at", dsn=dsn)
    assert (result.rows_examined, result.duplicates, result.groups) == (3, 1, 1)
    marks = dict(conn.execute("SELECT id, duplicate_of FROM items").fetchall())
    assert marks == {small: None, large: small, other_key: None}
