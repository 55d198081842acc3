"""pgdedup index against a real PostgreSQL: stored signatures, incremental reruns, key types."""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import psycopg
import pytest
from psycopg.conninfo import make_conninfo

import pgdedup
from pgdedup import Params, loader, sign_texts
from pgdedup.hashing import row_ids

from clirun import cli, cli_background
from crashes import signatures_fail_after
from reference import ref_sketch

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma".split()


def _text(i: int, n: int = 60) -> str:
    rng = np.random.default_rng(i)
    return " ".join(rng.choice(WORDS, n))


def _text_table(conn: psycopg.Connection, rows: int, words: int = 60) -> None:
    """Table ``t (id int PRIMARY KEY, body text)`` holding ``_text(i, words)`` for each id i < rows."""
    conn.execute("CREATE TABLE t (id int PRIMARY KEY, body text)")
    conn.cursor().executemany("INSERT INTO t VALUES (%s, %s)", [(i, _text(i, words)) for i in range(rows)])


def _stored(conn: psycopg.Connection, name: str) -> dict[str, tuple]:
    rows = conn.execute(
        "SELECT s.row_key, s.signature, s.buckets, s.feature_count, s.text_hash FROM pgdedup.signatures s "
        "JOIN pgdedup.collections c USING (collection_id) WHERE c.name = %s", (name,)).fetchall()
    return {r[0]: r[1:] for r in rows}


KEY_TYPES = [
    ("smallint", "smallint", lambda i: i - 30),  # negative keys too
    ("integer", "integer", lambda i: i),
    ("bigint", "bigint", lambda i: 10**12 + i),
    ("uuid", "uuid", lambda i: uuid.UUID(int=i * 7919)),
    ("text", "text", lambda i: f"k-{i}"),
    ("varchar(12)", "character varying", lambda i: f"v-{i:03d}"),
]


@pytest.mark.parametrize("declared,recorded,make_key", KEY_TYPES, ids=[k[1] for k in KEY_TYPES])
def test_stored_signatures_round_trip_every_key_type(conn, dsn, declared, recorded, make_key):
    """Round trip (not an accuracy oracle; see test_oracles_sql): what the loader stores is what
    ``sign_texts`` computes for the same text, under the key's text form, for every key type."""
    conn.execute(f"CREATE TABLE docs (id {declared} PRIMARY KEY, title text, body text)")
    rows = [(make_key(i), f"Title {i}" if i % 3 else None, _text(i) if i % 5 else None) for i in range(60)]
    # row 60 repeats row 1's text: similar() by key must find exactly it, at similarity 1
    rows.append((make_key(60), rows[1][1], rows[1][2]))
    with conn.cursor().copy("COPY docs (id, title, body) FROM STDIN") as copy:
        for r in rows:
            copy.write_row(r)
    result = pgdedup.index("docs", "id", ["title", "body"], dsn=dsn, chunk_size=16, progress=False)
    assert (result.source_rows, result.signed, result.removed) == (61, 61, 0)
    assert conn.execute("SELECT key_type FROM pgdedup.collections").fetchone()[0] == recorded
    texts = ["\n".join(c for c in r[1:] if c is not None) for r in rows]
    expected = sign_texts(texts, Params())
    stored = _stored(conn, "docs")
    assert set(stored) == {str(r[0]) for r in rows}
    for i, r in enumerate(rows):
        sig, buckets, count, th = stored[str(r[0])]
        assert sig == ref_sketch(expected.signature(i))
        assert count == expected.feature_counts[i]
        assert th == expected.text_hashes[i]
        assert buckets == (expected.buckets[i].tolist() if count else [])
    # rows 0, 5, 10, ... with no title (i % 3 == 0) and no body (i % 5 == 0): 0, 15, 30, 45 are empty
    empty = {i for i in range(60) if i % 15 == 0}
    assert {i for i, r in enumerate(rows) if stored[str(r[0])][2] == 0} == empty
    bands = conn.execute("SELECT count(*) FROM pgdedup.band_keys").fetchone()[0]
    assert bands == 16 * (61 - len(empty))  # 16 × 8 at threshold 0.8
    # similar() by key, in the key's text form
    assert pgdedup.similar("docs", key=str(make_key(1)), dsn=dsn) == [(str(make_key(60)), 1.0)]
    assert pgdedup.similar("docs", key=make_key(60), dsn=dsn) == [(str(make_key(1)), 1.0)]
    assert conn.execute("SELECT pgdedup.similarity('docs', %s, %s)",
                        (str(make_key(1)), str(make_key(60)))).fetchone()[0] == 1.0
    with pytest.raises(pgdedup.RowNotFound, match=f'collection "docs" has no row with key "{make_key(61)}"'):
        pgdedup.similar("docs", key=str(make_key(61)), dsn=dsn)


def test_rerun_is_incremental_and_idempotent(conn, dsn):
    _text_table(conn, 100)
    first = pgdedup.index("t", "id", ["body"], dsn=dsn, progress=False)
    before = _stored(conn, "t")
    again = pgdedup.index("t", "id", ["body"], dsn=dsn, progress=False)
    assert (again.signed, again.removed, again.unchanged) == (0, 0, 100)
    assert _stored(conn, "t") == before
    conn.execute("UPDATE t SET body = body || ' changed words at the end' WHERE id < 5")
    conn.execute("DELETE FROM t WHERE id BETWEEN 90 AND 99")
    conn.execute("INSERT INTO t VALUES (1000, %s)", (_text(1000),))
    third = pgdedup.index("t", "id", ["body"], dsn=dsn, progress=False)
    assert (third.signed, third.removed, third.source_rows) == (6, 10, 91)
    after = _stored(conn, "t")
    assert set(after) == {str(i) for i in range(90)} | {"1000"}
    for i in range(5, 90):
        assert after[str(i)] == before[str(i)]
    for i in range(5):
        assert after[str(i)][0] != before[str(i)][0]
    # band keys follow: exactly one per band per stored non-empty row, none orphaned
    orphans = conn.execute("SELECT count(*) FROM pgdedup.band_keys b WHERE NOT EXISTS "
                           "(SELECT 1 FROM pgdedup.signatures s WHERE s.row_id = b.row_id)").fetchone()[0]
    assert orphans == 0
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys").fetchone()[0] == 91 * first.params.bands


def _heap_fetches(conn: psycopg.Connection, query: str) -> int:
    """Heap visits of ``query``'s index-only scan (sequential scans off): 0 when every page it
    reads is in the visibility map."""
    with conn.transaction():
        conn.execute("SET LOCAL enable_seqscan = off")
        conn.execute("SET LOCAL enable_bitmapscan = off")
        plan = conn.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {query}").fetchone()[0][0]["Plan"]
    found = []

    def walk(node: dict) -> None:
        if node["Node Type"] == "Index Only Scan":
            found.append(node["Heap Fetches"])
        for child in node.get("Plans", []):
            walk(child)

    walk(plan)
    assert found, plan
    return sum(found)


#: Index-only scans of the two tables a full run vacuums (``_heap_fetches`` counts their heap visits).
BAND_SCAN = "SELECT count(*) FROM pgdedup.band_keys WHERE collection_id = 1 AND band = 3"
TEXT_SCAN = "SELECT count(*) FROM pgdedup.signatures WHERE collection_id = 1 AND text_hash >= -9223372036854775808"


def _table_without_autovacuum(conn: psycopg.Connection, dsn: str, tables: tuple[str, ...]) -> None:
    """Table t of 400 texts and a migrated schema whose ``tables`` autovacuum leaves alone, so that
    only an index run's own VACUUM can put their pages in the visibility map. Nor does it touch
    t: an autovacuum ANALYZE of the freshly filled t, running beside the index run, holds a
    snapshot that keeps the run's VACUUM from marking the pages it wrote (one CI run under load
    saw every band key fetched from the heap)."""
    _text_table(conn, 400)
    conn.execute("ALTER TABLE t SET (autovacuum_enabled = off)")
    pgdedup.migrate(dsn)
    for table in tables:
        conn.execute(f"ALTER TABLE pgdedup.{table} SET (autovacuum_enabled = off)")


@pytest.mark.parametrize("staged", [True, False], ids=["staged", "direct"])
def test_a_full_run_leaves_what_it_wrote_to_index_only_scans(conn, dsn, monkeypatch, staged):
    """A dedupe right after an index reads the band keys and signatures by index-only scans: a
    full run that wrote at least a twentieth of the rows VACUUMs the two tables, so their pages
    are in the visibility map (a page written and not vacuumed costs every index entry a heap
    visit), after a first load (staged or not) and after a rerun that changed and removed rows;
    a rerun that changed one row in 400 leaves that to autovacuum (off here, so that only the
    run's own pass can mark pages)."""
    if staged:
        monkeypatch.setattr(loader, "DIRECT_SHARE_OF_BUFFERS", 0.0)
    _table_without_autovacuum(conn, dsn, ("signatures", "band_keys", "band_keys_staged"))
    pgdedup.index("t", "id", ["body"], dsn=dsn, progress=False)
    assert (_heap_fetches(conn, BAND_SCAN), _heap_fetches(conn, TEXT_SCAN)) == (0, 0)
    conn.execute("UPDATE t SET body = body || ' and a new ending' WHERE id % 7 = 0")
    conn.execute("DELETE FROM t WHERE id % 11 = 0")
    again = pgdedup.index("t", "id", ["body"], dsn=dsn, progress=False)
    assert again.signed > 0 and again.removed > 0
    assert (_heap_fetches(conn, BAND_SCAN), _heap_fetches(conn, TEXT_SCAN)) == (0, 0)
    conn.execute("UPDATE t SET body = 'one new text' WHERE id = 1")
    assert pgdedup.index("t", "id", ["body"], dsn=dsn, progress=False).signed == 1
    assert _heap_fetches(conn, TEXT_SCAN) > 0


def test_the_closing_vacuum_leaves_a_table_another_session_holds_and_the_run_succeeds(conn, dsn):
    """The closing VACUUM runs after the run has released its locks and waits at most
    VACUUM_LOCK_TIMEOUT for a table another session holds (real CLI processes, a real lock):
    while the first run's pass waits for ``band_keys``, a second run of the collection goes
    through; then the first exits 0 with its summary, ``signatures`` vacuumed and ``band_keys``
    left to autovacuum (off here)."""
    _table_without_autovacuum(conn, dsn, ("signatures", "band_keys"))
    waiting = ("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'pgdedup index t (vacuum)' "
               "AND wait_event_type = 'Lock'")
    with psycopg.connect(dsn) as holder:
        holder.execute("LOCK TABLE pgdedup.band_keys IN SHARE UPDATE EXCLUSIVE MODE")  # as a VACUUM of it would
        first = cli_background("index", "t", "--key", "id", "--text", "body", "--no-progress", "--dsn", dsn)
        try:
            deadline = time.monotonic() + 60
            while conn.execute(waiting).fetchone()[0] == 0:
                assert first.poll() is None and time.monotonic() < deadline, first.communicate()
                time.sleep(0.05)
            again = cli("index", "t", "--no-progress", "--dsn", dsn, timeout=120)
            assert again.returncode == 0, again.stderr
            out, err = first.communicate(timeout=120)
        finally:
            if first.poll() is None:
                first.kill()
    assert first.returncode == 0, err
    assert "indexed t: 400 rows (400 signed" in out
    assert _heap_fetches(conn, TEXT_SCAN) == 0 and _heap_fetches(conn, BAND_SCAN) > 0


def test_changed_parameters_refused_unless_reindex(conn, dsn):
    _text_table(conn, 20)
    pgdedup.index("t", "id", ["body"], dsn=dsn, progress=False)
    with pytest.raises(pgdedup.InvalidArgument, match="ngram: stored 5, requested 3.*rerun with --reindex"):
        pgdedup.index("t", "id", ["body"], dsn=dsn, params=Params(ngram=3), progress=False)
    redone = pgdedup.index("t", "id", ["body"], dsn=dsn, params=Params(ngram=3), reindex=True, progress=False)
    assert redone.signed == 20
    expected = sign_texts([_text(i) for i in range(20)], Params(ngram=3))
    stored = _stored(conn, "t")
    assert all(stored[str(i)][0] == ref_sketch(expected.signature(i)) for i in range(20))
    assert conn.execute("SELECT ngram FROM pgdedup.collections").fetchone()[0] == 3


def test_char_unit_and_custom_name(conn, dsn):
    _text_table(conn, 10, words=10)
    params = Params(unit="char", ngram=4, threshold=0.6)
    pgdedup.index("t", "id", ["body"], name="t_chars", dsn=dsn, params=params, progress=False)
    expected = sign_texts([_text(i, 10) for i in range(10)], params)
    stored = _stored(conn, "t_chars")
    assert all(stored[str(i)][0] == ref_sketch(expected.signature(i)) for i in range(10))
    assert conn.execute("SELECT bands, rows_per_band FROM pgdedup.collections").fetchone() == (
        params.bands, params.rows)


@pytest.mark.parametrize("staged", [True, False], ids=["staged", "direct"])
def test_crash_midway_resumes(conn, dsn, monkeypatch, staged):
    """A load that dies after some chunks leaves committed chunks; the rerun signs only the rest,
    whether the first load stages its band keys (a large one) or writes them straight into
    band_keys (a small one; the threshold is lowered to 0 to stage these 50 rows)."""
    if staged:
        monkeypatch.setattr(loader, "DIRECT_SHARE_OF_BUFFERS", 0.0)
    _text_table(conn, 50)
    pgdedup.migrate(dsn)
    with signatures_fail_after(conn, 20), pytest.raises(psycopg.Error, match="simulated crash"):
        pgdedup.index("t", "id", ["body"], dsn=dsn, chunk_size=10, progress=False)
    assert conn.execute("SELECT count(*) FROM pgdedup.signatures").fetchone()[0] == 20
    where = ("SELECT count(*) FROM pgdedup.band_keys_staged", "SELECT count(*) FROM pgdedup.band_keys")
    assert conn.execute(where[not staged]).fetchone()[0] == 20 * Params().bands
    assert conn.execute(where[staged]).fetchone()[0] == 0
    resumed = pgdedup.index("t", "id", ["body"], dsn=dsn, chunk_size=10, progress=False)
    assert resumed.signed == 30
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys").fetchone()[0] == 50 * Params().bands
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys_staged").fetchone()[0] == 0
    expected = sign_texts([_text(i) for i in range(50)])
    stored = _stored(conn, "t")
    assert all(stored[str(i)][0] == ref_sketch(expected.signature(i)) for i in range(50))
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 50


def test_workers_store_identical_results(conn, dsn):
    _text_table(conn, 300)
    dumps = []
    for workers, name in ((1, "one"), (2, "two"), (3, "three")):
        result = pgdedup.index("t", "id", ["body"], name=name, dsn=dsn, workers=workers, chunk_size=40,
                               progress=False)
        assert result.signed == 300
        dumps.append((
            conn.execute("SELECT row_key, row_id, signature, buckets, text_hash FROM pgdedup.signatures s "
                         "JOIN pgdedup.collections USING (collection_id) WHERE name = %s ORDER BY row_key",
                         (name,)).fetchall(),
            conn.execute("SELECT band, bucket, row_id FROM pgdedup.band_keys b JOIN pgdedup.collections "
                         "USING (collection_id) WHERE name = %s ORDER BY 1, 2, 3", (name,)).fetchall()))
    assert len(dumps[0][0]) == 300 and len(dumps[0][1]) == 300 * Params().bands
    assert dumps[0] == dumps[1] == dumps[2]


def _dump(conn: psycopg.Connection, name: str) -> tuple[list, list]:
    rows = conn.execute(
        "SELECT row_key, row_id, signature, buckets, text_hash, feature_count FROM pgdedup.signatures s "
        "JOIN pgdedup.collections USING (collection_id) WHERE name = %s ORDER BY row_key COLLATE \"C\"",
        (name,)).fetchall()
    bands = conn.execute("SELECT band, bucket, row_id FROM pgdedup.band_keys b JOIN pgdedup.collections "
                         "USING (collection_id) WHERE name = %s ORDER BY 1, 2, 3", (name,)).fetchall()
    return rows, bands


@pytest.mark.parametrize("key_type,make_key", [
    # text keys whose order differs between collations and byte order: case, digits, non-ASCII
    ("text", lambda i: ["k-", "K-", "é-", "z ", "Z_", "ß"][i % 6] + str(i)),
    ("uuid", lambda i: uuid.UUID(int=(i * 0x9E3779B97F4A7C15) % 2**128)),
], ids=["text", "uuid"])
def test_workers_identical_results_text_and_uuid_keys(conn, dsn, key_type, make_key):
    """Two workers split the key range at a quantile of the key; every row must still be signed
    exactly once, with the same stored values as one worker."""
    if key_type == "text":  # a linguistic collation, where the key order is not byte order
        icu = conn.execute("SELECT collname FROM pg_collation WHERE collname IN ('und-x-icu', 'en_US.utf8', "
                           "'en_US.UTF-8', 'C.utf8') ORDER BY collname = 'und-x-icu' DESC LIMIT 1").fetchone()
        if icu:
            key_type = f'text COLLATE "{icu[0]}"'
    conn.execute(f"CREATE TABLE t (id {key_type} PRIMARY KEY, body text)")
    keys = [make_key(i) for i in range(200)]
    assert len(set(keys)) == 200
    conn.cursor().executemany("INSERT INTO t VALUES (%s, %s)", [(k, _text(i)) for i, k in enumerate(keys)])
    for workers, name in ((1, "one"), (2, "two")):
        result = pgdedup.index("t", "id", ["body"], name=name, dsn=dsn, workers=workers, chunk_size=30,
                               progress=False)
        assert (result.source_rows, result.signed) == (200, 200)
    one, two = _dump(conn, "one"), _dump(conn, "two")
    assert sorted(r[0] for r in one[0]) == sorted(str(k) for k in keys)
    assert len(one[1]) == 200 * 16
    assert one == two


def test_a_first_load_stages_its_band_keys_only_when_they_outgrow_twice_shared_buffers(conn):
    """By hand: 16 bands × 40 B a key; with 128 MB of shared_buffers, twice that holds the keys of
    2 × 134,217,728 / 640 = 419,430.4 rows."""
    if conn.execute("SHOW shared_buffers").fetchone()[0] != "128MB":
        pytest.skip("the figures are derived for the test server's 128 MB of shared_buffers")
    assert Params().bands == 16
    assert not loader._stages(conn, 419_430, Params())
    assert loader._stages(conn, 419_431, Params())


def _family_table(conn, table: str = "docs", n: int = 600) -> list[tuple[int, str]]:
    """A table of ``n`` rows of near-duplicate families; returns its rows."""
    import random
    from families import text
    rng = random.Random(1)
    rows = [(i, text(rng, rng.randrange(60), rng.randrange(4))) for i in range(n)]
    conn.execute(f"CREATE TABLE {table} (id int PRIMARY KEY, body text)")
    conn.cursor().executemany(f"INSERT INTO {table} VALUES (%s, %s)", rows)
    return rows


def _crash_a_staged_first_load(conn, dsn, monkeypatch, table: str = "docs") -> list[tuple[int, str]]:
    """600 rows of near-duplicate families; a first load that stages its band keys dies after
    200 rows (a trigger raises in the chunk that reaches them). Returns the table's rows."""
    from families import PARAMS
    rows = _family_table(conn, table)
    pgdedup.migrate(dsn)
    monkeypatch.setattr(loader, "DIRECT_SHARE_OF_BUFFERS", 0.0)
    with signatures_fail_after(conn, 200), pytest.raises(psycopg.Error, match="simulated crash"):
        pgdedup.index(table, "id", ["body"], params=PARAMS, dsn=dsn, chunk_size=50, progress=False)
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys_staged").fetchone()[0] > 0
    return rows


def test_a_resumed_staged_load_forgets_the_staged_keys_of_vanished_rows(conn, dsn, monkeypatch):
    """Rows deleted between the crash and the resume lose their staged band keys too: none is
    left without its signature, and the rows can come back (found by a hostile review: the keys
    stayed, and re-adding the rows failed as a row-id collision)."""
    rows = _crash_a_staged_first_load(conn, dsn, monkeypatch)
    conn.execute("DELETE FROM docs WHERE id IN (SELECT row_key::int FROM pgdedup.signatures ORDER BY 1 LIMIT 10)")
    assert pgdedup.index("docs", dsn=dsn, chunk_size=50, progress=False).removed == 10
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys b WHERE NOT EXISTS (SELECT 1 FROM pgdedup.signatures s "
                        "WHERE s.row_id = b.row_id)").fetchone()[0] == 0
    conn.cursor().executemany("INSERT INTO docs VALUES (%s, %s) ON CONFLICT DO NOTHING", rows)
    assert pgdedup.index("docs", dsn=dsn, chunk_size=50, progress=False).signed == 10


def test_a_dedupe_between_a_staged_crash_and_the_resume_leaves_no_stale_marks(conn, dsn, monkeypatch):
    """A dedupe after the crash decides the signed rows without their band keys (still staged);
    the resume moves the keys in and logs those rows again, so the next, incremental dedupe
    marks exactly what a full one does (found by a hostile review: 15 rows differed)."""
    _crash_a_staged_first_load(conn, dsn, monkeypatch)
    pgdedup.dedupe("docs", dsn=dsn, progress=False)
    pgdedup.index("docs", dsn=dsn, chunk_size=50, progress=False)
    marks = "SELECT id, duplicate_of FROM docs ORDER BY id"
    assert pgdedup.dedupe("docs", dsn=dsn, progress=False).kind == "incremental"
    incremental = conn.execute(marks).fetchall()
    pgdedup.dedupe("docs", dsn=dsn, full=True, progress=False)
    assert conn.execute(marks).fetchall() == incremental
    assert sum(d is not None for _, d in incremental) > 100  # the families do mark rows


def _band_keys(conn, table: str) -> int:
    return conn.execute("SELECT count(*) FROM pgdedup.band_keys b JOIN pgdedup.collections c USING (collection_id) "
                        "WHERE c.name = %s", (table,)).fetchone()[0]


def test_a_staged_load_moves_its_keys_and_leaves_another_collections_staged_ones(conn, dsn, monkeypatch):
    """The staging table is shared: a collection whose staged load crashed keeps its staged keys
    while another one's staged load moves its own in (so the staging table is emptied by DELETE,
    not TRUNCATE), and gets them when it resumes. Every stored signature's bucket of every band
    is then in band_keys."""
    _crash_a_staged_first_load(conn, dsn, monkeypatch, "crashed")
    left = conn.execute("SELECT count(*) FROM pgdedup.band_keys_staged").fetchone()[0]
    _family_table(conn, "other", 300)
    # two workers: the staged keys move in two sessions at once, eight bands each
    pgdedup.index("other", "id", ["body"], dsn=dsn, chunk_size=50, progress=False, workers=2)
    assert _band_keys(conn, "other") == 300 * Params().bands
    assert conn.execute("""SELECT count(*) FROM pgdedup.signatures s JOIN pgdedup.collections c USING (collection_id),
          unnest(s.buckets) WITH ORDINALITY u(bucket, band)
        WHERE c.name = 'other' AND NOT EXISTS (SELECT 1 FROM pgdedup.band_keys b WHERE b.collection_id = s.collection_id
          AND b.band = u.band - 1 AND b.bucket = u.bucket AND b.row_id = s.row_id)""").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys_staged").fetchone()[0] == left
    pgdedup.index("crashed", dsn=dsn, chunk_size=50, progress=False)
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys_staged").fetchone()[0] == 0
    assert _band_keys(conn, "crashed") == 600 * 8  # families.PARAMS: 8 bands


def test_a_staged_load_does_not_wait_for_another_writer_of_the_staging_table(conn, dsn, monkeypatch):
    """An open transaction that holds the staging table's ROW EXCLUSIVE lock (as another load's
    COPY does) would block a TRUNCATE: the flush asks with NOWAIT and deletes its keys instead.
    Were it to wait, the run would end only when the other session is closed, after 20 s."""
    import threading
    import time
    _family_table(conn, "docs", 300)
    pgdedup.migrate(dsn)
    monkeypatch.setattr(loader, "DIRECT_SHARE_OF_BUFFERS", 0.0)
    other = psycopg.connect(dsn)
    other.execute("LOCK TABLE pgdedup.band_keys_staged IN ROW EXCLUSIVE MODE")
    timer = threading.Timer(20, other.close)
    timer.start()
    try:
        t0 = time.perf_counter()
        pgdedup.index("docs", "id", ["body"], dsn=dsn, chunk_size=50, progress=False)
        assert time.perf_counter() - t0 < 15
        assert not other.closed
    finally:
        timer.cancel()
        other.close()
    assert _band_keys(conn, "docs") == 300 * Params().bands
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys_staged").fetchone()[0] == 0


def test_moving_staged_keys_stops_when_the_run_no_longer_holds_the_lock(conn, dsn, monkeypatch):
    """The sessions that move a staged load's keys check, like every chunk, that the run's session
    still holds the collection's lock: a move orphaned by a dead run must not race the next run
    (found by a hostile review: the rerun's move hit the orphan's uncommitted keys, a primary key
    violation). Here the lock holder named is a backend that holds no lock: nothing moves."""
    _crash_a_staged_first_load(conn, dsn, monkeypatch)
    staged = conn.execute("SELECT count(*) FROM pgdedup.band_keys_staged").fetchone()[0]
    cid = conn.execute("SELECT collection_id FROM pgdedup.collections").fetchone()[0]
    with pytest.raises(psycopg.Error) as raised:
        loader._flush_in_parallel(dsn, cid, 8, 2, conn.info.backend_pid)
    assert raised.value.sqlstate == "PD005"
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys_staged").fetchone()[0] == staged
    assert pgdedup.index("docs", dsn=dsn, chunk_size=50, progress=False).signed == 400
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys_staged").fetchone()[0] == 0


def _band_key_constraints(conn: psycopg.Connection) -> list[tuple]:
    return conn.execute("SELECT conname, contype, convalidated, pg_get_constraintdef(oid) FROM pg_constraint "
                        "WHERE conrelid = 'pgdedup.band_keys'::regclass").fetchall()


def test_a_staged_first_load_into_an_empty_band_keys_builds_its_key_once(conn, dsn, monkeypatch):
    """Revision 41: the first large load of a database moves its staged keys into the empty
    ``band_keys`` by one insert, then adds the primary key again; a later one, beside that
    collection's keys, moves them by sorted inserts, and a small load writes them directly. The
    three store the same keys, which are the buckets ``sign_texts`` makes, and the primary key
    is back as it was and refuses a duplicate."""
    _text_table(conn, 300)
    pgdedup.migrate(dsn)
    before = _band_key_constraints(conn)
    assert [c[:3] for c in before] == [("band_keys_pkey", "p", True)]
    monkeypatch.setattr(loader, "DIRECT_SHARE_OF_BUFFERS", 0.0)  # stage these small loads
    runs = [pgdedup.index("t", "id", ["body"], name=name, dsn=dsn, workers=2, chunk_size=40, progress=False)
            for name in ("a", "b")]
    monkeypatch.undo()
    runs.append(pgdedup.index("t", "id", ["body"], name="c", dsn=dsn, workers=2, chunk_size=40, progress=False))
    assert [r.stats["band_keys"] for r in runs] == ["rebuilt", "inserted", "direct"]
    assert [0 < r.stats.get("move_seconds", 0) < r.stats["seconds"] for r in runs] == [True, True, False]
    assert _dump(conn, "a") == _dump(conn, "b") == _dump(conn, "c")
    signed = sign_texts([_text(i) for i in range(300)])
    ids = row_ids([str(i) for i in range(300)])
    expected = sorted((band, int(signed.buckets[i, band]), int(ids[i])) for i in range(300) for band in range(16))
    assert _dump(conn, "a")[1] == expected
    assert _band_key_constraints(conn) == before
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys_staged").fetchone()[0] == 0
    with pytest.raises(psycopg.errors.UniqueViolation), conn.transaction():
        conn.execute("INSERT INTO pgdedup.band_keys SELECT * FROM pgdedup.band_keys LIMIT 1")


def test_a_rebuild_that_cannot_have_band_keys_soon_leaves_them_to_the_inserts(conn, dsn, monkeypatch):
    """Another session reading ``band_keys`` (an open transaction) keeps the rebuild from its
    lock: it gives up after its lock timeout (2 s, revision 42), having changed nothing, and the
    keys are moved by the inserts of revision 18, whose sessions do not wait for it."""
    _text_table(conn, 300)
    pgdedup.migrate(dsn)
    monkeypatch.setattr(loader, "DIRECT_SHARE_OF_BUFFERS", 0.0)
    with psycopg.connect(dsn) as reader:
        reader.execute("SELECT count(*) FROM pgdedup.band_keys")  # holds ACCESS SHARE to its commit
        started = time.monotonic()
        run = pgdedup.index("t", "id", ["body"], name="a", dsn=dsn, workers=2, chunk_size=40, progress=False)
        waited = time.monotonic() - started
        reader.rollback()
    assert run.stats["band_keys"] == "inserted"
    assert waited >= 2  # the rebuild's lock_timeout
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys").fetchone()[0] == 300 * 16
    assert [c[:3] for c in _band_key_constraints(conn)] == [("band_keys_pkey", "p", True)]


@pytest.mark.parametrize("held", [False, True])
def test_the_rebuild_gives_the_caller_its_lock_timeout_back(conn, dsn, monkeypatch, held):
    """rebuild_band_keys waits at most 2 s for each lock, whatever the session's (longer)
    lock_timeout; whether it rebuilds or gives up, the rest of the caller's transaction runs with
    the caller's value again (before revision 52, with the 2 s)."""
    _crash_a_staged_first_load(conn, dsn, monkeypatch)
    cid = conn.execute("SELECT collection_id FROM pgdedup.collections").fetchone()[0]
    staged = conn.execute("SELECT count(*) FROM pgdedup.band_keys_staged").fetchone()[0]
    with psycopg.connect(dsn) as reader, psycopg.connect(make_conninfo(dsn, options="-c lock_timeout=10s")) as caller:
        if held:
            reader.execute("SELECT count(*) FROM pgdedup.band_keys")  # holds ACCESS SHARE to its rollback
        moved = caller.execute("SELECT pgdedup.rebuild_band_keys(%s)", (cid,)).fetchone()[0]
        assert caller.execute("SHOW lock_timeout").fetchone()[0] == "10s"
        assert moved == (None if held else staged)
        caller.rollback()


def test_a_staged_first_load_beside_another_collections_staged_keys_inserts_and_spares_them(conn, dsn, monkeypatch):
    """band_keys is empty, but a crashed first load of another collection left keys staged: the
    rebuild does not apply (it would move or truncate them), the sorted inserts move this load's
    keys, the other's stay staged, and its resume moves them in."""
    _crash_a_staged_first_load(conn, dsn, monkeypatch, table="crashed")
    waiting = conn.execute("SELECT count(*) FROM pgdedup.band_keys_staged").fetchone()[0]
    _text_table(conn, 300)
    run = pgdedup.index("t", "id", ["body"], dsn=dsn, workers=2, chunk_size=40, progress=False)
    assert run.stats["band_keys"] == "inserted"
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys_staged").fetchone()[0] == waiting
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys").fetchone()[0] == 300 * 16
    pgdedup.index("crashed", dsn=dsn, chunk_size=50, progress=False)
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys_staged").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys").fetchone()[0] == conn.execute(
        "SELECT sum(c.bands) FROM pgdedup.signatures s JOIN pgdedup.collections c USING (collection_id) "
        "WHERE s.feature_count > 0").fetchone()[0]
    assert conn.execute("SELECT count(*) FROM pgdedup.signatures").fetchone()[0] == 300 + 600


def test_a_load_beside_other_collections_keys_never_asks_for_their_locks(conn, dsn, monkeypatch):
    """Revision 42: a staged first load beside another collection's keys (the usual case) finds
    the rebuild inapplicable before asking for any lock, so a session reading band_keys in an
    open transaction holds up neither the load nor, through a queued lock request, anyone else
    (revision 41 waited for the lock first, 5 s here)."""
    _text_table(conn, 300)
    pgdedup.index("t", "id", ["body"], name="first", dsn=dsn, progress=False)
    monkeypatch.setattr(loader, "DIRECT_SHARE_OF_BUFFERS", 0.0)
    asked = set()
    with psycopg.connect(dsn) as reader, ThreadPoolExecutor(1) as pool:
        reader.execute("SELECT count(*) FROM pgdedup.band_keys")  # holds ACCESS SHARE to its commit
        load = pool.submit(pgdedup.index, "t", "id", ["body"], name="second", dsn=dsn, workers=2, chunk_size=40,
                           progress=False)
        while not load.done():  # (a request would wait 2 s, the lock timeout: seen by any poll; the
            # staging table's is revision 18's TRUNCATE, asked for with NOWAIT)
            asked |= {r[0] for r in conn.execute(
                "SELECT relation::regclass::text FROM pg_locks WHERE mode = 'AccessExclusiveLock' "
                "AND relation = 'pgdedup.band_keys'::regclass").fetchall()}
            time.sleep(0.02)
        reader.rollback()
    assert load.result().stats["band_keys"] == "inserted"
    assert asked == set()
