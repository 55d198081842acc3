"""``pgdedup.shared_buckets`` and ``pgdedup.candidate_pairs`` against a reference written here in
Python: the buckets that two or more texts share, a capped bucket's members in leader order (by
keep order, ties by row id; or by row id), and the pairs they give, from the stored band keys
and the table itself."""

from __future__ import annotations

import random
from collections import defaultdict

import pgdedup

MAX_BUCKET = 10


def _clusters(conn, dsn: str, size: int = 40, words: int = 120) -> int:
    """Table clusters (id, body, n): 4 clusters of ``size`` near-copies (one word of ``words``
    changed), 15 exact copies of some of them and an empty text, in random order; indexed.
    Returns the collection id."""
    rng = random.Random(25)
    texts = []
    for c in range(4):
        base = [f"c{c}w{i}" for i in range(words)]
        for _ in range(size):
            edited = list(base)
            edited[rng.randrange(len(edited))] = f"x{rng.randrange(10 ** 6)}"
            texts.append(" ".join(edited))
    texts += texts[:15] + [""]
    rng.shuffle(texts)
    conn.execute("CREATE TABLE clusters (id int PRIMARY KEY, body text, n int)")
    with conn.cursor().copy("COPY clusters (id, body, n) FROM STDIN") as copy:
        for i, text in enumerate(texts, 1):
            copy.write_row((i, text, rng.randrange(30)))
    pgdedup.index("clusters", "id", ["body"], dsn=dsn, progress=False)
    return conn.execute("SELECT pgdedup.collection_id('clusters')").fetchone()[0]


def _reference(conn, cid: int, ranked: bool) -> dict[tuple[int, int], list[int]]:
    """The shared buckets by hand: each text stands for itself by its lowest signed row id (and,
    ranked, only while a row of it with features is left in the table, its place in keep order
    (n, id) being that of its first such row); buckets of two or more such rows; above
    MAX_BUCKET members in leader order, else sorted (any order)."""
    text_of = dict(conn.execute("SELECT row_id, text_hash FROM pgdedup.signatures WHERE collection_id = %s", (cid,)))
    key_of = dict(conn.execute("SELECT row_id, row_key::int FROM pgdedup.signatures WHERE collection_id = %s "
                               "AND feature_count > 0", (cid,)))
    n_of = dict(conn.execute("SELECT id, n FROM clusters"))
    first: dict[int, int] = {}
    for row_id, text in text_of.items():
        first[text] = min(row_id, first.get(text, row_id))
    present = [r for r in key_of if key_of[r] in n_of]
    rank: dict[int, int] = {}
    for place, row_id in enumerate(sorted(present, key=lambda r: (n_of[key_of[r]], key_of[r]))):
        rank.setdefault(text_of[row_id], place)
    buckets: dict[tuple[int, int], list[int]] = defaultdict(list)
    for band, bucket, row_id in conn.execute(
            "SELECT band, bucket, row_id FROM pgdedup.band_keys WHERE collection_id = %s", (cid,)):
        if first[text_of[row_id]] == row_id and (not ranked or text_of[row_id] in rank):
            buckets[(band, bucket)].append(row_id)
    leader = (lambda r: (rank[text_of[r]], r)) if ranked else (lambda r: r)
    return {k: sorted(v, key=leader) if len(v) > MAX_BUCKET else sorted(v) for k, v in buckets.items() if len(v) > 1}


def test_shared_buckets_and_their_leaders_match_a_reference(conn, dsn):
    """Also after rows left the table unindexed: a text whose first row went (another copy is
    left: it still stands, by its first row), a text with no row left (gone from the ranked
    buckets), and with a row of empty text (no features, no band keys)."""
    cid = _clusters(conn, dsn)
    copies = conn.execute("SELECT array_agg(row_key::int ORDER BY row_id) FROM pgdedup.signatures "
                          "GROUP BY text_hash HAVING count(*) > 1 ORDER BY min(row_id) LIMIT 1").fetchone()[0]
    alone = conn.execute("SELECT min(row_key::int) FROM pgdedup.signatures GROUP BY text_hash "
                         "HAVING count(*) = 1 AND min(feature_count) > 0 "
                         "ORDER BY min(row_id) LIMIT 1").fetchone()[0]
    conn.execute("DELETE FROM clusters WHERE id = ANY(%s)", ([copies[0], alone],))
    expected = {ranked: _reference(conn, cid, ranked) for ranked in (True, False)}
    for ranked, buckets in expected.items():
        with conn.transaction():
            if ranked:
                conn.execute("SELECT pgdedup.rank_rows(%s, 'n, id')", (cid,))
            got = {(band, bucket): ids if len(ids) > MAX_BUCKET else sorted(ids) for band, bucket, ids in conn.execute(
                "SELECT * FROM pgdedup.shared_buckets(%s, %s, %s)", (cid, MAX_BUCKET, ranked))}
        assert got == buckets, ranked
        capped = [ids for ids in buckets.values() if len(ids) > MAX_BUCKET]
        assert len(capped) >= 20 and len(buckets) > len(capped), "capped and uncapped buckets both met"
    ranked_rows, all_rows = ({r for ids in expected[ranked].values() for r in ids} for ranked in (True, False))
    assert len(all_rows - ranked_rows) == 1, "the text with no row left is only in the unranked buckets"


def _pairs(buckets: dict[tuple[int, int], list[int]]) -> set[tuple[int, int]]:
    """Candidate pairs by hand: all pairs of a bucket of at most MAX_BUCKET members; in a larger
    one, each of its first MAX_BUCKET members (leader order) with every member after it."""
    found = set()
    for ids in buckets.values():
        leaders = ids if len(ids) <= MAX_BUCKET else ids[:MAX_BUCKET]
        for i, a in enumerate(leaders):
            for b in ids[i + 1:]:
                found.add((min(a, b), max(a, b)))
    return found


def test_candidate_pairs_match_pairs_made_by_hand(conn, dsn):
    """Also from buckets of ~300 members, which a full dedupe's pg_temp.pgdedup_shared stores out
    of line (TOAST): the pairs its estimate step reads are compared too."""
    cid = _clusters(conn, dsn, size=300, words=400)
    buckets = {ranked: _reference(conn, cid, ranked) for ranked in (True, False)}
    expected = {ranked: _pairs(b) for ranked, b in buckets.items()}
    assert max(len(ids) for ids in buckets[False].values()) > 250
    assert set(conn.execute("SELECT * FROM pgdedup.candidate_pairs(%s, %s)", (cid, MAX_BUCKET))) == expected[False]
    with conn.transaction():  # as update_duplicates' full run: the shared buckets kept in a temp table
        conn.execute("SELECT pgdedup.rank_rows(%s, 'n, id')", (cid,))
        conn.execute("CREATE TEMP TABLE pgdedup_shared ON COMMIT DROP AS "
                     "SELECT * FROM pgdedup.shared_buckets(%s, %s, true)", (cid, MAX_BUCKET))
        conn.execute("CREATE TEMP TABLE pgdedup_estimated_for ON COMMIT DROP AS SELECT %s::int AS collection_id, "
                     "%s::int AS max_bucket, transaction_timestamp() AS started", (cid, MAX_BUCKET))
        conn.execute("SELECT set_config('pgdedup.reuse_estimated', 'on', true)")
        assert conn.execute("SELECT pgdedup.reusing(%s, %s)", (cid, MAX_BUCKET)).fetchone()[0]
        stored = conn.execute("SELECT pg_relation_size(reltoastrelid) FROM pg_class "
                              "WHERE oid = 'pg_temp.pgdedup_shared'::regclass").fetchone()[0]
        got = set(conn.execute("SELECT * FROM pgdedup.candidate_pairs(%s, %s, true)", (cid, MAX_BUCKET)))
    assert stored > 0, "some buckets are stored out of line"
    assert got == expected[True]
