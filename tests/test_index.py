"""pgdedup index against a real PostgreSQL: stored signatures, incremental reruns, key types."""

from __future__ import annotations

import uuid

import numpy as np
import psycopg
import pytest

import pgdedup
from pgdedup import Params, PgdedupError, sign_texts

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma".split()


def _text(i: int, n: int = 60) -> str:
    rng = np.random.default_rng(i)
    return " ".join(rng.choice(WORDS, n))


def _stored(conn: psycopg.Connection, name: str) -> dict[str, tuple]:
    rows = conn.execute(
        "SELECT s.row_key, s.signature, s.buckets, s.feature_count, s.text_hash FROM pgdedup.signatures s "
        "JOIN pgdedup.collections c USING (collection_id) WHERE c.name = %s", (name,)).fetchall()
    return {r[0]: r[1:] for r in rows}


@pytest.mark.parametrize("key_type,make_key", [
    ("integer", lambda i: i), ("bigint", lambda i: 10**12 + i),
    ("uuid", lambda i: uuid.UUID(int=i * 7919)), ("text", lambda i: f"k-{i}")])
def test_stored_signatures_equal_python_api(conn, dsn, key_type, make_key):
    conn.execute(f"CREATE TABLE docs (id {key_type} PRIMARY KEY, title text, body text)")
    rows = [(make_key(i), f"Title {i}" if i % 3 else None, _text(i) if i % 5 else None) for i in range(60)]
    with conn.cursor().copy("COPY docs (id, title, body) FROM STDIN") as copy:
        for r in rows:
            copy.write_row(r)
    result = pgdedup.index("docs", "id", ["title", "body"], dsn=dsn, chunk_size=16, progress=False)
    assert (result.source_rows, result.signed, result.removed) == (60, 60, 0)
    texts = ["\n".join(c for c in r[1:] if c is not None) for r in rows]
    expected = sign_texts(texts, Params())
    stored = _stored(conn, "docs")
    assert len(stored) == 60
    for i, r in enumerate(rows):
        sig, buckets, count, th = stored[str(r[0])]
        assert sig == expected.signature(i).tolist()
        assert count == expected.feature_counts[i]
        assert th == expected.text_hashes[i]
        assert buckets == (expected.buckets[i].tolist() if count else [])
    bands = conn.execute("SELECT count(*) FROM pgdedup.band_keys").fetchone()[0]
    assert bands == Params().bands * sum(1 for v in stored.values() if v[2] > 0)


def test_rerun_is_incremental_and_idempotent(conn, dsn):
    conn.execute("CREATE TABLE t (id int PRIMARY KEY, body text)")
    conn.cursor().executemany("INSERT INTO t VALUES (%s, %s)", [(i, _text(i)) for i in range(100)])
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


def test_changed_parameters_refused_unless_reindex(conn, dsn):
    conn.execute("CREATE TABLE t (id int PRIMARY KEY, body text)")
    conn.cursor().executemany("INSERT INTO t VALUES (%s, %s)", [(i, _text(i)) for i in range(20)])
    pgdedup.index("t", "id", ["body"], dsn=dsn, progress=False)
    with pytest.raises(PgdedupError, match="ngram: stored 5, requested 3.*--reindex"):
        pgdedup.index("t", "id", ["body"], dsn=dsn, params=Params(ngram=3), progress=False)
    redone = pgdedup.index("t", "id", ["body"], dsn=dsn, params=Params(ngram=3), reindex=True, progress=False)
    assert redone.signed == 20
    expected = sign_texts([_text(i) for i in range(20)], Params(ngram=3))
    stored = _stored(conn, "t")
    assert all(stored[str(i)][0] == expected.signature(i).tolist() for i in range(20))
    assert conn.execute("SELECT ngram FROM pgdedup.collections").fetchone()[0] == 3


def test_char_unit_and_custom_name(conn, dsn):
    conn.execute("CREATE TABLE t (id int PRIMARY KEY, body text)")
    conn.cursor().executemany("INSERT INTO t VALUES (%s, %s)", [(i, _text(i, 10)) for i in range(10)])
    params = Params(unit="char", ngram=4, threshold=0.6)
    pgdedup.index("t", "id", ["body"], name="t_chars", dsn=dsn, params=params, progress=False)
    expected = sign_texts([_text(i, 10) for i in range(10)], params)
    stored = _stored(conn, "t_chars")
    assert all(stored[str(i)][0] == expected.signature(i).tolist() for i in range(10))
    assert conn.execute("SELECT bands, rows_per_band FROM pgdedup.collections").fetchone() == (
        params.bands, params.rows)


def test_crash_midway_resumes(conn, dsn):
    """A load that dies after some chunks leaves committed chunks; the rerun signs only the rest."""
    conn.execute("CREATE TABLE t (id int PRIMARY KEY, body text)")
    conn.cursor().executemany("INSERT INTO t VALUES (%s, %s)", [(i, _text(i)) for i in range(50)])
    pgdedup.migrate(dsn)
    conn.execute("""CREATE FUNCTION public.fail_after_20() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF (SELECT count(*) FROM pgdedup.signatures) >= 20 THEN RAISE EXCEPTION 'simulated crash'; END IF;
        RETURN NEW; END $$""")
    conn.execute("CREATE TRIGGER crash BEFORE INSERT ON pgdedup.signatures FOR EACH ROW EXECUTE FUNCTION fail_after_20()")
    with pytest.raises(psycopg.Error, match="simulated crash"):
        pgdedup.index("t", "id", ["body"], dsn=dsn, chunk_size=10, progress=False)
    assert conn.execute("SELECT count(*) FROM pgdedup.signatures").fetchone()[0] == 20
    assert conn.execute("SELECT (SELECT count(*) FROM pgdedup.band_keys) + "
                        "(SELECT count(*) FROM pgdedup.band_keys_staged)").fetchone()[0] == 20 * Params().bands
    conn.execute("DROP TRIGGER crash ON pgdedup.signatures")
    resumed = pgdedup.index("t", "id", ["body"], dsn=dsn, chunk_size=10, progress=False)
    assert resumed.signed == 30
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys").fetchone()[0] == 50 * Params().bands
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys_staged").fetchone()[0] == 0
    expected = sign_texts([_text(i) for i in range(50)])
    stored = _stored(conn, "t")
    assert all(stored[str(i)][0] == expected.signature(i).tolist() for i in range(50))
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 50


def test_workers_store_identical_results(conn, dsn):
    conn.execute("CREATE TABLE t (id int PRIMARY KEY, body text)")
    conn.cursor().executemany("INSERT INTO t VALUES (%s, %s)", [(i, _text(i)) for i in range(300)])
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
