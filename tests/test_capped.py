"""``pgdedup.shared_buckets`` against a reference written here in Python: the buckets that two or
more texts share, and a capped bucket's members in leader order (by keep order, ties by row id;
or by row id), from the stored band keys and the table itself."""

from __future__ import annotations

import random
from collections import defaultdict

import pgdedup

MAX_BUCKET = 10


def _clusters(conn, dsn: str) -> int:
    """Table clusters (id, body, n): 4 clusters of 40 near-copies (one word of 120 changed) and 15
    exact copies of some of them, in random order; indexed. Returns the collection id."""
    rng = random.Random(25)
    texts = []
    for c in range(4):
        base = [f"c{c}w{i}" for i in range(120)]
        for _ in range(40):
            words = list(base)
            words[rng.randrange(len(words))] = f"x{rng.randrange(10 ** 6)}"
            texts.append(" ".join(words))
    texts += texts[:15]
    rng.shuffle(texts)
    conn.execute("CREATE TABLE clusters (id int PRIMARY KEY, body text, n int)")
    with conn.cursor().copy("COPY clusters (id, body, n) FROM STDIN") as copy:
        for i, text in enumerate(texts, 1):
            copy.write_row((i, text, rng.randrange(30)))
    pgdedup.index("clusters", "id", ["body"], dsn=dsn, progress=False)
    return conn.execute("SELECT pgdedup.collection_id('clusters')").fetchone()[0]


def _reference(conn, cid: int, ranked: bool) -> dict[tuple[int, int], list[int]]:
    """The shared buckets by hand: each text stands for itself by its lowest row id; buckets
    of two or more such rows; above MAX_BUCKET members in leader order, else sorted (any order)."""
    text_of = dict(conn.execute("SELECT row_id, text_hash FROM pgdedup.signatures WHERE collection_id = %s", (cid,)))
    key_of = dict(conn.execute("SELECT row_id, row_key::int FROM pgdedup.signatures WHERE collection_id = %s", (cid,)))
    n_of = dict(conn.execute("SELECT id, n FROM clusters"))
    first: dict[int, int] = {}
    for row_id, text in text_of.items():
        first[text] = min(row_id, first.get(text, row_id))
    rank: dict[int, int] = {}  # a text's place: that of its first row in keep order (n, id)
    for place, row_id in enumerate(sorted(text_of, key=lambda r: (n_of[key_of[r]], key_of[r]))):
        rank.setdefault(text_of[row_id], place)
    buckets: dict[tuple[int, int], list[int]] = defaultdict(list)
    for band, bucket, row_id in conn.execute(
            "SELECT band, bucket, row_id FROM pgdedup.band_keys WHERE collection_id = %s", (cid,)):
        if first[text_of[row_id]] == row_id:
            buckets[(band, bucket)].append(row_id)
    leader = (lambda r: (rank[text_of[r]], r)) if ranked else (lambda r: r)
    return {k: sorted(v, key=leader) if len(v) > MAX_BUCKET else sorted(v) for k, v in buckets.items() if len(v) > 1}


def test_shared_buckets_and_their_leaders_match_a_reference(conn, dsn):
    cid = _clusters(conn, dsn)
    for ranked in (True, False):
        with conn.transaction():
            if ranked:
                conn.execute("SELECT pgdedup.rank_rows(%s, 'n, id')", (cid,))
            got = {(band, bucket): ids if len(ids) > MAX_BUCKET else sorted(ids) for band, bucket, ids in conn.execute(
                "SELECT * FROM pgdedup.shared_buckets(%s, %s, %s)", (cid, MAX_BUCKET, ranked))}
        expected = _reference(conn, cid, ranked)
        assert got == expected, ranked
        capped = [ids for ids in expected.values() if len(ids) > MAX_BUCKET]
        assert len(capped) >= 20 and len(expected) > len(capped), "capped and uncapped buckets both met"
