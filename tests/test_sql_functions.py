"""Each SQL function of the pgdedup schema, called from SQL as an analyst in psql would."""

from __future__ import annotations

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import pgdedup
from pgdedup import sign_texts

BASE = " ".join(f"t{i}" for i in range(120))
NEAR = BASE.replace("t60", "changed")  # one substitution: J = 110 / 122
FAR = " ".join(f"u{i}" for i in range(120))


@pytest.fixture
def indexed(conn, dsn):
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text)")
    conn.cursor().executemany("INSERT INTO docs VALUES (%s, %s)",
                              [(1, BASE), (2, NEAR), (3, FAR), (4, BASE), (5, None), (6, "")])
    pgdedup.index("docs", "id", ["body"], dsn=dsn, progress=False)
    return conn.execute("SELECT pgdedup.collection_id('docs')").fetchone()[0]


def one(conn, query: str, *args):
    return conn.execute(query, args).fetchone()[0]


def test_similarity_of_sketches(conn, dsn):
    """Values derived by hand: a sketch keeps the low 16 bits of each value, so values that
    differ only above them agree (the cost revision 23 accepts, probability 2**-16 for minima)."""
    pgdedup.migrate(dsn)
    assert one(conn, "SELECT pgdedup.sketch('{1, -1, 65536, 74565}')::text") == (
        "0000000000000001" "1111111111111111" "0000000000000000" "0010001101000101")  # 74565 = 0x12345
    assert one(conn, "SELECT pgdedup.similarity(pgdedup.sketch('{1,2,3,4}'), pgdedup.sketch('{1,2,0,4}'))") == 0.75
    assert one(conn, "SELECT pgdedup.similarity(pgdedup.sketch('{65537,2}'), pgdedup.sketch('{1,131074}'))") == 1.0
    # a difference in any single bit of a lane is a difference: each bit of lane 2 of 3 in turn
    for bit in range(16):
        assert one(conn, "SELECT pgdedup.similarity(pgdedup.sketch(%s::int[]), pgdedup.sketch('{7,0,9}'))",
                   [7, 1 << bit, 9]) == pytest.approx(2 / 3)
    assert one(conn, "SELECT pgdedup.similarity(pgdedup.sketch('{}'), pgdedup.sketch('{}'))") == 0
    assert one(conn, "SELECT pgdedup.similarity(pgdedup.sketch('{}'), pgdedup.sketch('{1,2}'))") == 0
    assert one(conn, "SELECT pgdedup.similarity(pgdedup.sketch('{1,2}'), pgdedup.sketch('{}'))") == 0
    assert one(conn, "SELECT pgdedup.similarity(NULL::bit varying, pgdedup.sketch('{1}'))") is None
    for a, b in (("pgdedup.sketch('{1,2}')", "pgdedup.sketch('{1}')"), ("B'101'", "B'101'"),
                 ("pgdedup.sketch(array_fill(1, ARRAY[1025]))", "pgdedup.sketch(array_fill(1, ARRAY[1025]))")):
        with pytest.raises(psycopg.Error, match="the same number of 16-bit lanes, at most 1024") as info:
            conn.execute(f"SELECT pgdedup.similarity({a}, {b})")
        assert info.value.sqlstate == "PD003"
    with pytest.raises(psycopg.Error, match="has no NULL values"):
        conn.execute("SELECT pgdedup.sketch('{1,NULL,2}')")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(1, 1024).flatmap(lambda k: st.tuples(
    st.lists(st.integers(-2**31, 2**31 - 1), min_size=k, max_size=k),
    st.lists(st.tuples(st.booleans(), st.integers(-2**31, 2**31 - 1)), min_size=k, max_size=k))))
def test_similarity_counts_agreeing_lanes_like_a_loop(conn, dsn, arrays):
    """Property, against a Python loop over positions: for any lengths up to 1024 (num_perm's
    range), positions copied, changed above the low 16 bits, or redrawn."""
    pgdedup.migrate(dsn)
    a, changes = arrays
    b = [x if keep else (x ^ (y << 16) if y % 2 else y) for x, (keep, y) in zip(a, changes)]
    b = [((v + 2**31) % 2**32) - 2**31 for v in b]  # back into int4
    expected = sum((x & 0xFFFF) == (y & 0xFFFF) for x, y in zip(a, b)) / len(a)
    assert one(conn, "SELECT pgdedup.similarity(pgdedup.sketch(%s::int[]), pgdedup.sketch(%s::int[]))",
               a, b) == pytest.approx(expected, abs=1e-12)


def test_similarity_by_key_matches_python(conn, indexed):
    signed = sign_texts([BASE, NEAR])
    expected = float(((signed.signature(0) & 0xFFFF) == (signed.signature(1) & 0xFFFF)).mean())  # the sketches'
    assert one(conn, "SELECT pgdedup.similarity('docs', '1', '2')") == pytest.approx(expected)
    assert one(conn, "SELECT pgdedup.similarity('docs', '1', '4')") == 1.0
    assert one(conn, "SELECT pgdedup.similarity('docs', '5', '6')") == 0.0  # empty texts: similar to nothing
    with pytest.raises(psycopg.Error, match='no collection named "nope"') as info:
        conn.execute("SELECT pgdedup.similarity('nope', '1', '2')")
    assert info.value.sqlstate == "PD001"


def test_representatives_and_candidates(conn, indexed):
    reps = {r[0] for r in conn.execute("SELECT row_key FROM pgdedup.representatives(%s) r "
                                       "JOIN pgdedup.signatures s USING (row_id)", (indexed,))}
    assert reps == {"1", "2", "3"}  # 4 is an exact copy of 1; 5 and 6 are empty
    pairs = conn.execute("SELECT a.row_key, b.row_key FROM pgdedup.candidate_pairs(%s) p "
                         "JOIN pgdedup.signatures a ON a.row_id = p.row_a JOIN pgdedup.signatures b ON b.row_id = p.row_b",
                         (indexed,)).fetchall()
    assert pairs == [("1", "2")]
    verified = conn.execute("SELECT similarity FROM pgdedup.verified_pairs(%s, 0.5)", (indexed,)).fetchall()
    assert len(verified) == 1 and verified[0][0] == one(conn, "SELECT pgdedup.similarity('docs', '1', '2')")
    assert conn.execute("SELECT * FROM pgdedup.verified_pairs(%s, 0.99)", (indexed,)).fetchall() == []


def test_pairs_expand_exact_duplicates(conn, indexed):
    rows = conn.execute("SELECT key_a, key_b, similarity FROM pgdedup.pairs('docs')").fetchall()
    s12 = one(conn, "SELECT pgdedup.similarity('docs', '1', '2')")
    assert rows == [("1", "2", s12), ("1", "4", 1.0), ("2", "4", s12)]


def test_similar_and_similar_to(conn, indexed):
    assert conn.execute("SELECT row_key FROM pgdedup.similar('docs', '1')").fetchall() == [("4",), ("2",)]
    assert conn.execute("SELECT row_key FROM pgdedup.similar('docs', '1', 0.5, 1)").fetchall() == [("4",)]
    assert conn.execute("SELECT * FROM pgdedup.similar('docs', '3')").fetchall() == []
    with pytest.raises(psycopg.Error, match='no row with key "99"') as info:
        conn.execute("SELECT * FROM pgdedup.similar('docs', '99')")
    assert info.value.sqlstate == "PD002"
    signed = sign_texts([NEAR])
    got = conn.execute("SELECT row_key FROM pgdedup.similar_to('docs', %s, %s)",
                       (signed.signature(0).tolist(), signed.buckets[0].tolist())).fetchall()
    assert got == [("2",), ("1",), ("4",)]
    # as typed in psql: array literals without a type resolve (one similar_to takes a signature)
    literal = "{" + ",".join(map(str, signed.signature(0).tolist())) + "}"
    assert conn.execute(f"SELECT row_key FROM pgdedup.similar_to('docs', '{literal}', %s)",
                        (signed.buckets[0].tolist(),)).fetchall() == got


def test_keep_order_sql(conn, indexed):
    # each column with its type and collation (revision 54): a change of either changes the text
    assert one(conn, "SELECT pgdedup.keep_order_sql(%s, 'body desc nulls last')", indexed) == (
        's.body::text COLLATE pg_catalog."default" DESC NULLS LAST, s.id::integer ASC')
    assert one(conn, "SELECT pgdedup.keep_order_sql(%s, NULL)", indexed) == "s.id::integer ASC"
    for bad in ("body; drop table docs", "missing", "body sideways"):
        with pytest.raises(psycopg.Error, match="keep order") as info:
            conn.execute("SELECT pgdedup.keep_order_sql(%s, %s)", (indexed, bad))
        assert info.value.sqlstate == "PD003"


def test_find_mark_view_and_status(conn, indexed):
    assert conn.execute("SELECT * FROM pgdedup.find_duplicates('docs')").fetchone() == (6, 2, 1)
    assert conn.execute("SELECT row_key, duplicate_of FROM pgdedup.duplicates ORDER BY 1").fetchall() == [
        ("2", "1"), ("4", "1")]
    assert one(conn, "SELECT to_regclass('public.docs') IS NOT NULL")
    assert conn.execute("SELECT attname FROM pg_attribute WHERE attrelid = 'docs'::regclass AND attname = "
                        "'duplicate_of'").fetchall() == []
    assert one(conn, "SELECT pgdedup.create_duplicates_view('docs')") == "pgdedup.docs_duplicates"
    assert conn.execute("SELECT id, duplicate_of FROM pgdedup.docs_duplicates ORDER BY id").fetchall() == [(2, 1), (4, 1)]
    # the view depends on pgdedup's tables only: the app may change or drop its table
    conn.execute("ALTER TABLE docs ALTER COLUMN body TYPE varchar")
    assert conn.execute("SELECT * FROM pgdedup.mark_duplicates('docs', p_keep_order => 'id desc')").fetchone() == (
        6, 2, 1)
    assert conn.execute("SELECT id, duplicate_of FROM docs ORDER BY id").fetchall() == [
        (1, 4), (2, 4), (3, None), (4, None), (5, None), (6, None)]
    status = conn.execute("SELECT name, rows_indexed, duplicates, last_dedupe->>'duplicates' FROM pgdedup.status"
                          ).fetchone()
    assert status == ("docs", 6, 2, "2")


def test_dedupe_functions_send_no_notices(conn, indexed):
    """psql users saw six 'schema "pg_temp" does not exist, skipping' notices per call."""
    notices: list[str] = []
    conn.add_notice_handler(lambda diag: notices.append(diag.message_primary))
    conn.execute("SELECT * FROM pgdedup.find_duplicates('docs')")
    conn.execute("SELECT * FROM pgdedup.mark_duplicates('docs')")
    conn.execute("SELECT * FROM pgdedup.find_duplicates('docs', p_keep_order => 'body desc')")
    assert notices == []


def test_keys_in_their_own_type(conn, dsn):
    import uuid
    keys = [uuid.UUID(int=i * 7919) for i in range(1, 5)]
    conn.execute("CREATE TABLE u (id uuid PRIMARY KEY, body text)")
    for i, k in enumerate(keys):
        conn.execute("INSERT INTO u VALUES (%s, %s)", (k, "alpha beta gamma delta epsilon zeta eta theta" if i < 3
                                                      else "something entirely different from the others here"))
    pgdedup.index("u", "id", ["body"], dsn=dsn, progress=False)
    rows = conn.execute("SELECT s.row_key, pg_typeof(s.row_key)::text, u.body FROM pgdedup.similar('u', %s::uuid) s "
                        "JOIN u ON u.id = s.row_key ORDER BY 1", (keys[0],)).fetchall()
    assert [r[0] for r in rows] == sorted(keys[1:3]) and {r[1] for r in rows} == {"uuid"}
    upper = str(keys[0]).upper()  # a text key is read as the key type
    assert [r[0] for r in conn.execute("SELECT row_key FROM pgdedup.similar('u', %s) ORDER BY 1", (upper,))] == \
        sorted(str(k) for k in keys[1:3])
    assert conn.execute("SELECT pgdedup.similarity('u', %s::uuid, %s::uuid)", (keys[0], keys[1])).fetchone()[0] == 1.0
    for bad, state in ((("SELECT * FROM pgdedup.similar('u', 5::bigint)"), "PD003"),
                       (("SELECT * FROM pgdedup.similar('u', 'not-a-uuid')"), "PD002")):
        with pytest.raises(psycopg.Error) as info:
            conn.execute(bad)
        assert info.value.sqlstate == state
