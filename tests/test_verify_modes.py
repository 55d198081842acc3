"""The three verify modes on pairs the estimate gets wrong, judged by exact Jaccard from the
reference shingler (tests/reference.py), not by pgdedup's own exact path.

* a pair just *below* the threshold whose estimate is above it: estimate keeps it, auto and
  exact drop it;
* a pair just *above* the threshold whose estimate is below it: estimate drops it, auto and
  exact keep it, with its exact similarity;
* a pair far above the threshold is accepted by auto on its estimate, without a check.
"""

from __future__ import annotations

import math
import os
import random
import re
import signal
import subprocess
import sys
import time

import numpy as np
import psycopg
from psycopg import sql
import pytest
from hypothesis import given, settings, strategies as st

import families
import pgdedup
from pgdedup import collections, exact
from pgdedup.exact import _batches

from clirun import cli
from planted import edit, story
from reference import ref_jaccard, ref_word_shingles
from test_workers import start_methods

T = 0.8
PARAMS = pgdedup.Params(threshold=T, num_perm=128)


def _estimate(a: str, b: str) -> float:
    signed = pgdedup.sign_texts([a, b], PARAMS)
    return float((signed.signature(0) == signed.signature(1)).mean())


def _band(t: float, k: int, alpha: float = 1e-3) -> tuple[float, float]:
    """The ambiguous band from the binomial distribution, computed here independently."""
    pmf = [math.comb(k, m) * t ** m * (1 - t) ** (k - m) for m in range(k + 1)]
    hi = next(m for m in range(k + 1) if sum(pmf[m:]) <= alpha) / k
    lo = max((m + 1 for m in range(k + 1) if sum(pmf[:m + 1]) <= alpha), default=0) / k
    return lo, hi


LO, HI = _band(T, 128)


@settings(max_examples=300, deadline=None)
@given(st.sets(st.integers(0, 2**64 - 1)), st.sets(st.integers(0, 2**64 - 1)), st.sets(st.integers(0, 2**64 - 1)))
def test_exact_jaccard_of_two_feature_sets_is_that_of_python_sets(only_a, only_b, both):
    a, b = only_a | both, only_b | both  # overlapping on purpose; ``both`` may share values with the others
    arrays = [np.array(sorted(x), dtype=np.uint64) for x in (a, b)]
    assert exact.common(*arrays) == exact.common(*arrays[::-1]) == len(a & b)
    assert exact.jaccard(*arrays) == (len(a & b) / len(a | b) if a and b else 0.0)


def _find(rng: random.Random, want: str) -> tuple[str, str, float, float]:
    """A base story and an edited copy whose exact Jaccard and estimate fall as ``want`` says."""
    for _ in range(20000):
        base = story(rng, 200)
        copy = edit(rng, base, rng.randrange(3, 9))
        a, b = " ".join(base), " ".join(copy)
        j = ref_jaccard(ref_word_shingles(a), ref_word_shingles(b))
        est = _estimate(a, b)
        if ((want == "below" and j < T <= est < HI) or (want == "above" and LO <= est < T <= j)
                or (want == "clear" and est >= HI and j >= T)):
            return a, b, j, est
    raise AssertionError(f"no {want} pair found")


@pytest.fixture
def cases(conn, dsn):
    rng = random.Random(2026)
    found = {want: _find(rng, want) for want in ("below", "above", "clear")}
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text, n int)")
    ids = {}
    for n, (want, (a, b, j, est)) in enumerate(found.items()):
        conn.execute("INSERT INTO docs VALUES (%s, %s, 0), (%s, %s, 1)", (10 * n + 1, a, 10 * n + 2, b))
        ids[want] = (str(10 * n + 1), str(10 * n + 2), j, est)
    pgdedup.index("docs", "id", ["body"], params=PARAMS, dsn=dsn, progress=False)
    return ids


def _pairs(dsn: str, verify: str) -> dict[tuple[str, str], float]:
    return {tuple(sorted((a, b))): s for a, b, s in pgdedup.pairs("docs", verify=verify, dsn=dsn)}


def test_the_band_is_the_binomial_one(conn, dsn):
    pgdedup.migrate(dsn)
    for t, k in ((0.8, 128), (0.5, 64), (0.95, 256), (0.3, 16)):
        lo, hi = conn.execute("SELECT lo, hi FROM pgdedup.auto_band(%s, %s)", (t, k)).fetchone()
        assert (lo, hi) == pytest.approx(_band(t, k))
    assert conn.execute("SELECT hi FROM pgdedup.auto_band(0.999, 128)").fetchone()[0] == 2  # never unchecked


def test_pairs_in_each_mode(conn, dsn, cases):
    below, above, clear = (cases[w] for w in ("below", "above", "clear"))
    estimate, auto, exact = (_pairs(dsn, v) for v in ("estimate", "auto", "exact"))
    assert below[:2] in estimate and above[:2] not in estimate
    for found in (auto, exact):
        assert below[:2] not in found
        assert found[above[:2]] == pytest.approx(above[2], abs=1e-12)  # the exact Jaccard
    assert auto[clear[:2]] == pytest.approx(clear[3])  # accepted on its estimate
    assert exact[clear[:2]] == pytest.approx(clear[2], abs=1e-12)
    checked = {tuple(r) for r in conn.execute(
        "SELECT a.row_key, b.row_key FROM pgdedup.checked c "
        "JOIN pgdedup.signatures a ON a.collection_id = c.collection_id AND a.text_hash = c.text_a "
        "JOIN pgdedup.signatures b ON b.collection_id = c.collection_id AND b.text_hash = c.text_b")}
    assert {tuple(sorted(p)) for p in checked} == {below[:2], above[:2]}, "only the ambiguous pairs were read again"


def test_dedupe_in_each_mode(conn, dsn, cases):
    below, above = cases["below"], cases["above"]
    for verify, marked in (("estimate", {below[1]}), ("auto", {above[1]}), ("exact", {above[1]})):
        result = pgdedup.dedupe("docs", keep_order="n, id", verify=verify, dsn=dsn)
        assert result.kind == "full"
        rows = conn.execute("SELECT id::text FROM docs WHERE duplicate_of IS NOT NULL").fetchall()
        assert {r[0] for r in rows} - {cases["clear"][1]} == marked, verify


def test_sql_needs_the_checks_made(conn, dsn, cases):
    with pytest.raises(psycopg.Error) as err:
        conn.execute("SELECT * FROM pgdedup.pairs('docs', NULL, 'auto')").fetchall()
    assert err.value.sqlstate == "PD004" and "checked exactly" in str(err.value)
    assert "--verify auto" in err.value.diag.message_hint
    pgdedup.pairs("docs", verify="auto", dsn=dsn)  # a generator: nothing happens until read
    list(pgdedup.pairs("docs", verify="auto", dsn=dsn))
    sql_auto = {tuple(sorted(r[:2])) for r in conn.execute("SELECT * FROM pgdedup.pairs('docs', NULL, 'auto')")}
    assert sql_auto == set(_pairs(dsn, "auto"))


def test_stage_lines_on_a_terminal_and_none_when_piped(conn, dsn, cases, capfd):
    pgdedup.dedupe("docs", keep_order="n, id", dsn=dsn, progress=True)
    err = capfd.readouterr().err
    full = err.splitlines()
    assert re.search(r"\rchecking docs exactly: +\d+%\|.*\| \d/2 ", err), err  # a counter while they run, then cleared
    assert any(re.fullmatch(r"dedupe docs: \d+ candidate pairs estimated \(\d+\.\d s\)", x) for x in full), full
    assert any(re.fullmatch(r"dedupe docs: 2 ambiguous pairs checked exactly \(\d+\.\d s\)", x) for x in full), full
    assert any(x.startswith("dedupe docs: decided and stored in full") for x in full), full
    body = conn.execute("SELECT body FROM docs WHERE id = 1").fetchone()[0]
    conn.execute("INSERT INTO docs VALUES (99, %s, 2)", (body + " one more word",))
    pgdedup.index("docs", dsn=dsn, progress=False)
    pgdedup.dedupe("docs", keep_order="n, id", dsn=dsn, progress=True)
    incremental = capfd.readouterr().err
    assert "dedupe docs: closure step 1:" in incremental and "rows decided again" in incremental
    assert "dedupe docs: stored, marks written" in incremental
    proc = cli("dedupe", "docs", "--keep-order", "n, id", "--full", "--dsn", dsn)  # piped: quiet
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_checks_are_made_from_the_signed_text_only(conn, dsn, cases):
    """A row changed in the source after it was signed cannot be checked in its place: the run
    stops with StaleResults (nothing stored for it) until index has seen the change."""
    below = cases["below"]
    conn.execute("UPDATE docs SET body = 'an entirely different text now' WHERE id = %s", (below[1],))
    with pytest.raises(pgdedup.StaleResults, match="run `pgdedup index docs`"):
        pgdedup.dedupe("docs", keep_order="n, id", dsn=dsn)
    assert conn.execute("SELECT count(*) FROM pgdedup.checked").fetchone()[0] == 0
    pgdedup.index("docs", dsn=dsn, progress=False)
    assert pgdedup.dedupe("docs", keep_order="n, id", dsn=dsn).kind == "full"
    conn.execute("INSERT INTO docs VALUES (98, 'one more text, alone', 5)")
    pgdedup.index("docs", dsn=dsn, progress=False)
    assert pgdedup.dedupe("docs", keep_order="n, id", dsn=dsn).kind == "incremental"
    assert conn.execute("SELECT stats->>'verify' FROM pgdedup.runs WHERE kind = 'dedupe' "
                        "ORDER BY run_id DESC LIMIT 1").fetchone()[0] == "auto"


def test_a_check_reads_any_row_that_still_holds_the_signed_text(conn, dsn, cases):
    """A text is checked from its first row (by row id) if that row's normalised text is still
    the one signed (a change of case and spacing only keeps it), else from a copy whose source
    text is unchanged since it was signed; with neither, the text is stale."""
    below = cases["below"]
    body = conn.execute("SELECT body FROM docs WHERE id = %s", (below[1],)).fetchone()[0]
    conn.execute("INSERT INTO docs VALUES (97, %s, 7)", (body,))
    pgdedup.index("docs", dsn=dsn, progress=False)
    first, second = [r[0] for r in conn.execute(
        "SELECT g.row_key FROM pgdedup.signatures g JOIN pgdedup.signatures b ON b.text_hash = g.text_hash "
        "WHERE b.row_key = %s ORDER BY g.row_id", (below[1],))]
    assert sorted([first, second]) == sorted([below[1], "97"])

    def checked() -> float:
        conn.execute("DELETE FROM pgdedup.checked")
        pgdedup.dedupe("docs", keep_order="n, id", dsn=dsn, full=True)
        (similarity,) = conn.execute("SELECT c.similarity FROM pgdedup.checked c JOIN pgdedup.signatures g "
                                     "ON g.text_hash IN (c.text_a, c.text_b) WHERE g.row_key = '97'").fetchone()
        return similarity

    conn.execute("UPDATE docs SET body = %s WHERE id = %s", ("  " + body.upper().replace(" ", " \n\t "), first))
    assert checked() == pytest.approx(below[2], abs=1e-12)  # the reference's Jaccard, from the first row
    conn.execute("UPDATE docs SET body = 'not the signed text at all' WHERE id = %s", (first,))
    assert checked() == pytest.approx(below[2], abs=1e-12)  # from the copy
    conn.execute("UPDATE docs SET body = body || ' ' WHERE id = %s", (second,))  # no longer unchanged
    with pytest.raises(pgdedup.StaleResults, match="rows changed in public.docs"):
        checked()


def test_exact_verification_reads_each_row_as_signed(conn, dsn, cases):
    """verify="exact" checks rows, not texts: a row changed in case and spacing only is still
    the signed text; a row changed otherwise is stale, whatever its copies."""
    above = cases["above"]
    body = conn.execute("SELECT body FROM docs WHERE id = %s", (above[1],)).fetchone()[0]
    conn.execute("UPDATE docs SET body = %s WHERE id = %s", (body.upper() + "  ", above[1]))
    found = _pairs(dsn, "exact")
    assert found[above[:2]] == pytest.approx(above[2], abs=1e-12)
    conn.execute("UPDATE docs SET body = body || ' more' WHERE id = %s", (above[1],))
    with pytest.raises(pgdedup.StaleResults, match="rows changed in public.docs"):
        _pairs(dsn, "exact")


def test_a_row_moved_to_another_partition_is_not_checked_as_signed(conn, dsn, cases):
    """In a partitioned collection a text's hash includes its partition value (NULL, here, is a
    value of its own): the texts of the NULL partition are checked as signed, and a row moved to
    another partition after it was signed is not the text that was signed (StaleResults)."""
    below = cases["below"]
    conn.execute("ALTER TABLE docs ADD COLUMN feed text")
    pgdedup.drop("docs", dsn=dsn)
    pgdedup.index("docs", "id", ["body"], params=PARAMS, partition_by="feed", dsn=dsn, progress=False)
    pgdedup.dedupe("docs", keep_order="n, id", dsn=dsn)
    assert conn.execute("SELECT count(*) FROM pgdedup.checked").fetchone()[0] == 2
    conn.execute("DELETE FROM pgdedup.checked")
    conn.execute("UPDATE docs SET feed = 'b' WHERE id = %s", (below[1],))
    with pytest.raises(pgdedup.StaleResults, match="rows changed in public.docs"):
        pgdedup.dedupe("docs", keep_order="n, id", dsn=dsn, full=True)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)).filter(lambda p: p[0] < p[1]), unique=True),
       st.integers(2, 12))
def test_check_batches_hold_whole_components(pairs, texts):
    """Every pair is checked once; a batch reads at most ``texts`` texts unless a single component
    is larger (then it is cut into runs of pairs), and no component is split otherwise: each
    text is read in one batch only (the oracle: a brute-force closure over the pairs)."""
    batches = list(_batches(pairs, texts))
    assert sorted(p for b in batches for p in b) == sorted(pairs)
    linked = {t: {t} for p in pairs for t in p}
    for a, b in pairs:  # brute-force components
        merged = linked[a] | linked[b]
        for t in merged:
            linked[t] = merged
    for batch in batches:
        members = {t for p in batch for t in p}
        whole = set().union(*(linked[t] for t in members))
        if len(whole) > texts:  # a component larger than a batch: runs of its own pairs
            assert len(batch) <= texts and all(linked[t] == linked[batch[0][0]] for t in members)
        else:
            assert members == whole and len(members) <= texts, "a batch holds whole components"


def _indexed_families(conn, dsn: str, seed: int, rows: int, count: int) -> None:
    """Table docs (id, body, n = id) of ``rows`` texts from ``count`` families, indexed."""
    rng = random.Random(seed)
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text, n int)")
    with conn.cursor().copy("COPY docs FROM STDIN") as copy:
        for i in range(rows):
            copy.write_row((i, families.text(rng, rng.randrange(count), rng.randrange(4)), i))
    pgdedup.index("docs", "id", ["body"], params=families.PARAMS, dsn=dsn, progress=False)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_checks_in_worker_processes_equal_exact_jaccard(conn, dsn, method):
    """Many small batches: the checks run in worker processes (forked, or spawned beside another
    thread) on their own connections while the run holds its transaction and lock; every stored
    check equals the reference shingler's exact Jaccard of the two texts."""
    _indexed_families(conn, dsn, seed=7, rows=300, count=30)
    call = 'exact.BATCH = 10; pgdedup.dedupe("docs", keep_order="n, id", verify="auto", dsn=dsn)'
    seen = start_methods(dsn, call, other_thread=method == "spawn")
    assert seen == ([method] if sys.platform.startswith("linux") else ["spawn"])
    checked = conn.execute("SELECT text_a, text_b, similarity FROM pgdedup.checked").fetchall()
    assert len(list(_batches([(a, b) for a, b, _ in checked], 10))) >= exact.PARALLEL_BATCHES, "the pool's path"
    text_of = dict(conn.execute("SELECT g.text_hash, d.body FROM pgdedup.signatures g "
                                "JOIN docs d ON d.id::text = g.row_key").fetchall())
    n = families.PARAMS.ngram
    for a, b, similarity in checked:
        assert similarity == pytest.approx(ref_jaccard(ref_word_shingles(text_of[a], n), ref_word_shingles(text_of[b], n)))


CHECKING = """
import sys
import pgdedup
from pgdedup import exact
if __name__ == "__main__":
    exact.BATCH = 2  # many batches: worker processes, and time to be killed among them
    pgdedup.dedupe("docs", keep_order="n, id", verify="auto", dsn=sys.argv[1])
"""


def test_kill_9_of_a_dedupe_during_its_checks(conn, dsn):
    """SIGKILL of the dedupe process while its worker processes check pairs: they die with it
    (their sessions end), the run's transaction rolls back (no check stored, no lock left),
    and the next run decides everything."""
    _indexed_families(conn, dsn, seed=8, rows=400, count=20)
    run = subprocess.Popen([sys.executable, "-c", CHECKING, dsn], stderr=subprocess.PIPE, text=True)
    sessions = "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'pgdedup dedupe docs%%' AND %s"
    deadline = time.monotonic() + 60
    while conn.execute(sessions % "application_name LIKE '%%(checks)'").fetchone()[0] == 0:
        assert run.poll() is None and time.monotonic() < deadline, run.stderr.read() if run.stderr else ""
        time.sleep(0.01)
    os.kill(run.pid, signal.SIGKILL)
    run.wait(timeout=30)
    while conn.execute(sessions % "true").fetchone()[0]:
        assert time.monotonic() < deadline, "a worker outlived its parent"
        time.sleep(0.05)
    assert conn.execute("SELECT count(*) FROM pgdedup.checked").fetchone()[0] == 0
    again = pgdedup.dedupe("docs", keep_order="n, id", verify="auto", dsn=dsn)
    assert again.kind == "full" and again.duplicates > 0
    assert conn.execute("SELECT count(*) FROM pgdedup.checked").fetchone()[0] > 0


def test_exact_checks_every_pair_that_auto_would_decide_exactly(conn, dsn):
    """Exact's bar (threshold minus three standard errors) lay above the low end of auto's band
    for most settings: a pair there with exact Jaccard above the threshold was a duplicate under
    auto and not under exact. Here 40 distinct words against 33 of them and 7 others (shingles of
    one word): J = 33/47 = 0.702 >= 0.7, and with these seeds the estimate is 14/32 = 0.4375, in
    auto's band [0.4375, ...) and below 0.7 - 3·sqrt(0.7·0.3/32) = 0.457."""
    a = [f"u2338_{i}" for i in range(40)]
    b = a[:33] + [f"v2338_{i}" for i in range(7)]
    conn.execute("CREATE TABLE t (id int PRIMARY KEY, body text)")
    conn.execute("INSERT INTO t VALUES (1, %s), (2, %s)", (" ".join(a), " ".join(b)))
    params = pgdedup.Params(threshold=0.7, ngram=1, num_perm=32, bands=8, rows=2)
    pgdedup.index("t", "id", ["body"], params=params, dsn=dsn, progress=False)
    assert conn.execute("SELECT pgdedup.similarity('t', 1, 2)").fetchone()[0] == 14 / 32
    assert conn.execute("SELECT lo FROM pgdedup.auto_band(0.7, 32)").fetchone()[0] <= 14 / 32
    for verify in ("auto", "exact"):
        pgdedup.dedupe("t", verify=verify, full=True, dsn=dsn)
        assert conn.execute("SELECT id, duplicate_of FROM t ORDER BY id").fetchall() == [(1, None), (2, 1)], verify
        assert [p[:2] for p in pgdedup.pairs("t", verify=verify, dsn=dsn)] == [("1", "2")], verify


def _find_short(rng: random.Random, words: int, edited_at: int, want: str) -> tuple[str, str, float, float]:
    """Two short texts (``words`` words, the copy with the word ``edited_at`` from the end
    replaced) that LSH makes a candidate pair, whose estimate (on the stored 16-bit lanes) is
    past auto's band for long texts on the wrong side: ``below`` the threshold but estimated at
    HI or more, or ``above`` it but estimated under LO. Their feature sets are smaller than the
    signature (128 positions), where the estimate spreads wider than the band assumes."""
    for _ in range(200):
        pairs = []
        for _ in range(500):
            base = story(rng, words)
            copy = list(base)
            copy[-edited_at] = "zz" + base[-edited_at]
            pairs.append((" ".join(base), " ".join(copy)))
        signed = pgdedup.sign_texts([t for pair in pairs for t in pair], PARAMS)
        for i, (a, b) in enumerate(pairs):
            sa, sb = signed.signature(2 * i) & 0xFFFF, signed.signature(2 * i + 1) & 0xFFFF
            est = float((sa == sb).mean())
            candidate = bool((signed.buckets[2 * i] == signed.buckets[2 * i + 1]).any())
            if not candidate or not (est >= HI if want == "below" else est < LO):
                continue
            j = ref_jaccard(ref_word_shingles(a), ref_word_shingles(b))
            assert len(ref_word_shingles(a)) < 128
            if (j < T) if want == "below" else (j >= T):
                return a, b, j, est
    raise AssertionError(f"no short {want} pair found")


def test_short_texts_are_checked_whatever_their_estimate(conn, dsn):
    """A pair in which a text has fewer features than the signature has positions is decided by
    its exact Jaccard in auto (estimate and exact Jaccard by the reference shingler): one at
    J = 7/9 estimated above the band is dropped, one at J = 0.8 estimated below it is kept;
    estimate mode keeps the first and drops the second, exact agrees with auto."""
    rng = random.Random(31)
    below = _find_short(rng, 12, 1, "below")  # 8 shingles each, 7 shared
    above = _find_short(rng, 49, 5, "above")  # 45 shingles each, 40 shared
    assert below[2] == pytest.approx(7 / 9) and above[2] == pytest.approx(0.8)
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text, n int)")
    conn.execute("INSERT INTO docs VALUES (1, %s, 0), (2, %s, 1), (11, %s, 0), (12, %s, 1)",
                 (below[0], below[1], above[0], above[1]))
    pgdedup.index("docs", "id", ["body"], params=PARAMS, dsn=dsn, progress=False)
    explained = pgdedup.explain("docs", "1", "2", dsn=dsn)
    assert explained.ambiguous[1] == 2 and "exact Jaccard decides" in explained.verdict
    assert "estimates from 0.562 up are checked exactly" in explained.summary()
    estimate, auto, exact_pairs = (_pairs(dsn, v) for v in ("estimate", "auto", "exact"))
    assert ("1", "2") in estimate and ("11", "12") not in estimate
    for found in (auto, exact_pairs):
        assert set(found) == {("11", "12")}
        assert found[("11", "12")] == pytest.approx(0.8, abs=1e-12)
    for verify, marked in (("estimate", {"2"}), ("auto", {"12"}), ("exact", {"12"})):
        pgdedup.dedupe("docs", keep_order="n, id", verify=verify, dsn=dsn)
        assert {r[0] for r in conn.execute("SELECT id::text FROM docs WHERE duplicate_of IS NOT NULL")} == marked, verify


def test_the_rule_change_of_revision_31_redecides_in_full(conn, dsn):
    """Revision 32 (and its downgrade) clear the stored auto results' last change: after a
    migration across revision 31's rule change, the next dedupe decides in full, so no mark of
    the other rule survives outside an incremental run's region."""
    below = _find_short(random.Random(31), 12, 1, "below")
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text, n int)")
    conn.execute("INSERT INTO docs VALUES (1, %s, 0), (2, %s, 1)", below[:2])
    pgdedup.index("docs", "id", ["body"], params=PARAMS, dsn=dsn, progress=False)
    for alter in (True, False):
        assert pgdedup.dedupe("docs", alter=alter, keep_order="n, id", dsn=dsn).kind == "full"
    stored = "SELECT target, change_seq FROM pgdedup.results ORDER BY target"
    decided = conn.execute(stored).fetchall()
    assert all(seq is not None for _, seq in decided)
    pgdedup.downgrade(dsn, "0031_small_sets")
    assert conn.execute(stored).fetchall() == [(t, None) for t, _ in decided], "the downgrade's"
    for target, seq in decided:  # as results stored by a run at revision 31 would be
        conn.execute("UPDATE pgdedup.results SET change_seq = %s WHERE target = %s", (seq, target))
    conn.execute("INSERT INTO docs VALUES (3, 'one more text, alone', 2)")
    pgdedup.migrate(dsn)
    assert conn.execute(stored).fetchall() == [(t, None) for t, _ in decided], "the upgrade's"
    pgdedup.index("docs", dsn=dsn, progress=False)
    for alter in (True, False):
        assert pgdedup.dedupe("docs", alter=alter, keep_order="n, id", dsn=dsn).kind == "full"
        assert pgdedup.dedupe("docs", alter=alter, keep_order="n, id", dsn=dsn).kind == "incremental"


@pytest.mark.parametrize("verify", ["estimate", "auto"])
@pytest.mark.parametrize("max_bucket", [2, 100])
def test_a_full_runs_edges_from_its_estimates_equal_the_look_ups(conn, dsn, verify, max_bucket):
    """Inside update_duplicates' own full run, decide() takes each edge's two text hashes from
    the run's estimated pairs (revision 38); outside such a run it looks both rows up in
    pgdedup.signatures, as before. The two ways must give the same edges: the same decision
    runs both ways in one transaction (the auto run's "unchecked" return leaves its estimates in
    place), with exact copies (unedited family texts) and, with max_bucket 2, capped buckets."""
    _indexed_families(conn, dsn, seed=11, rows=120, count=6)
    with psycopg.connect(dsn) as c:
        row = c.execute("SELECT * FROM pgdedup.update_duplicates('docs', false, NULL, 'n, id', 'duplicate_of', %s, true, "
                        "'auto')", (max_bucket,)).fetchone()
        assert row[0] == "unchecked", "the run stops with its estimates in place"
        capped = c.execute("SELECT count(*) FROM pg_temp.pgdedup_shared WHERE cardinality(ids) > %s",
                           (max_bucket,)).fetchone()[0]
        assert (capped > 0) == (max_bucket == 2), "capped buckets with max_bucket 2 only"
        coll = collections.get(c, "docs")
        exact.store_checks(c, coll, sql.SQL("SELECT * FROM pg_temp.pgdedup_unchecked"))
        edges = {}
        for reuse in ("on", "off"):
            c.execute("SELECT pg_catalog.set_config('pgdedup.reuse_estimated', %s, true)", (reuse,))
            assert c.execute("SELECT pgdedup.reusing(%s, %s)", (coll.id, max_bucket)).fetchone()[0] == (reuse == "on")
            c.execute("SELECT pgdedup.decide(%s, NULL, 'n, id', %s, %s)", (coll.id, max_bucket, verify))
            edges[reuse] = sorted(c.execute("SELECT h1, h2, similarity FROM pg_temp.pgdedup_edges").fetchall())
        c.rollback()
    copies = conn.execute("SELECT count(*) - count(DISTINCT text_hash) FROM pgdedup.signatures").fetchone()[0]
    assert copies > 0 and len(edges["on"]) > 20
    assert edges["on"] == edges["off"]
