"""``pgdedup explain``: its counts against the reference shingler, its diff against edits made by
hand, its verdicts, and the SQL twin."""

from __future__ import annotations

import json
import random

import pytest

import pgdedup

from clirun import cli, one_line_error
from planted import VOCAB, story
from reference import ref_jaccard, ref_word_shingles


@pytest.fixture
def docs(conn, dsn):
    rng = random.Random(8)
    base = story(rng, 120)
    edited = list(base)
    edited[40] = "replacedword"  # one word replaced: one differing stretch, at word 40
    edited[90:92] = []  # two words removed, at word 90
    texts = {1: " ".join(base), 2: " ".join(edited), 3: " ".join(base), 4: " ".join(rng.choice(VOCAB) for _ in range(120))}
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text)")
    for key, text in texts.items():
        conn.execute("INSERT INTO docs VALUES (%s, %s)", (key, text))
    pgdedup.index("docs", "id", ["body"], dsn=dsn, progress=False)
    return texts


def test_counts_diff_and_verdict_of_a_near_copy(conn, dsn, docs):
    found = pgdedup.explain("docs", "1", "2", dsn=dsn)
    a, b = ref_word_shingles(docs[1]), ref_word_shingles(docs[2])
    assert (found.features_a, found.features_b) == (len(a), len(b))
    assert (found.shared, found.only_a, found.only_b) == (len(a & b), len(a - b), len(b - a))
    assert found.exact == pytest.approx(ref_jaccard(a, b), abs=1e-12)
    assert found.estimate == conn.execute("SELECT pgdedup.similarity('docs', 1, 2)").fetchone()[0]
    assert found.diff == [{"at": 40, "a": [docs[1].split()[40]], "b": ["replacedword"]},
                          {"at": 90, "a": docs[1].split()[90:92], "b": []}]
    assert found.candidate and found.verdict.startswith("duplicates")
    assert "at word 40" in found.summary()


def test_an_exact_copy_shares_every_band_and_a_stranger_none(conn, dsn, docs):
    same = pgdedup.explain("docs", "1", "3", dsn=dsn)
    assert same.exact == 1.0 and same.diff == [] and same.shared_bands == list(range(1, same.bands + 1))
    assert same.verdict.startswith("duplicates: the same text")  # (it said "the estimate is ambiguous")
    stranger = pgdedup.explain("docs", "1", "4", dsn=dsn)
    assert stranger.shared_bands == [] and stranger.verdict.startswith("not a candidate")
    assert stranger.shared == len(ref_word_shingles(docs[1]) & ref_word_shingles(docs[4]))


def test_cli_json_errors_and_sql_twin(conn, dsn, docs):
    proc = cli("explain", "docs", "1", "2", "--json", "--dsn", dsn)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["key_a"] == "1" and out["candidate"] is True and out["diff"][0]["at"] == 40
    one_line_error(cli("explain", "docs", "1", "99", "--dsn", dsn), "no row with key")
    one_line_error(cli("explain", "docs", "1", "x", "--dsn", dsn), "no row with key")
    est, fa, fb, bands, shared, lo, hi, t = conn.execute("SELECT * FROM pgdedup.explain('docs', 1, 3)").fetchone()
    assert (est, fa == fb, shared, t) == (1.0, True, list(range(1, bands + 1)), 0.8) and lo < t < hi
    with pgdedup.collection("docs", dsn) as coll:
        assert coll.explain(1, 2).exact == pgdedup.explain("docs", "1", "2", dsn=dsn).exact


def test_a_pair_whose_every_shared_bucket_is_capped(conn, dsn):
    """160 texts that differ in their last word share nearly every bucket, each of more than
    100 texts: pairs and dedupe pair each member with a bucket's first 100 only, so some pairs
    are never compared. explain called them duplicates; it now says they are compared only
    if one of them leads a shared bucket, and --max-bucket above the buckets' size makes them
    plain candidates again. Oracle: the pairs found with and without the cap."""
    base = " ".join(f"word{j}" for j in range(199))
    conn.execute("CREATE TABLE flat (id int PRIMARY KEY, body text)")
    conn.cursor().executemany("INSERT INTO flat VALUES (%s, %s)", [(i, f"{base} uniq{i}") for i in range(1, 161)])
    pgdedup.index("flat", "id", ["body"], dsn=dsn, progress=False)
    capped = {(a, b) for a, b, _ in pgdedup.pairs("flat", dsn=dsn)}
    every = {(a, b) for a, b, _ in pgdedup.pairs("flat", max_bucket=1000, dsn=dsn)}
    missing = sorted(every - capped, key=lambda p: (int(p[0]), int(p[1])))
    assert missing, "the cap leaves some pairs out"
    a, b = missing[0]
    found = pgdedup.explain("flat", a, b, dsn=dsn)
    assert found.candidate and found.capped_bands == found.shared_bands
    assert found.verdict.startswith("compared only if one of them is among the first 100 texts")
    proc = cli("explain", "flat", a, b, "--max-bucket", "1000", "--json", "--dsn", dsn)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["capped_bands"] == [] and out["verdict"].startswith("duplicates: the estimate is above")
    one_line_error(cli("explain", "flat", a, b, "--max-bucket", "0", "--dsn", dsn), "max_bucket must be a positive")
