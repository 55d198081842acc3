"""Bad input gets a clear error and loses nothing: missing names, hostile identifiers, odd text."""

from __future__ import annotations

import pytest

import pgdedup
from pgdedup import Params, PgdedupError, sign_texts

from clirun import cli, one_line_error
from reference import ref_sketch


def _schema_exists(conn) -> bool:
    return conn.execute("SELECT to_regnamespace('pgdedup') IS NOT NULL").fetchone()[0]


@pytest.mark.parametrize("args,message", [
    (["nosuchtable", "--key", "id", "--text", "body"], "table 'nosuchtable' does not exist"),
    (["t", "--key", "nokey", "--text", "body"], "column 'nokey' does not exist in table public.t"),
    (["t", "--key", "id", "--text", "body", "--text", "nobody"], "column 'nobody' does not exist"),
    (["t", "--key", "score", "--text", "body"], "key column 'score' has type double precision"),
])
def test_missing_names_fail_cleanly(conn, dsn, args, message):
    conn.execute("CREATE TABLE t (id int PRIMARY KEY, body text, score float8)")
    conn.execute("INSERT INTO t VALUES (1, 'some text here', 1.5)")
    proc = cli("index", *args, "--dsn", dsn)
    assert proc.returncode == 1
    assert proc.stderr.startswith("pgdedup: error: ") and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not _schema_exists(conn)  # nothing created
    assert conn.execute("SELECT count(*), min(body) FROM t").fetchone() == (1, "some text here")


def test_bad_connection_is_one_line(tmp_path):
    proc = cli("status", "--dsn", f"host={tmp_path} port=1 dbname=x connect_timeout=2")
    assert proc.returncode == 1
    assert proc.stderr.startswith("pgdedup: error: cannot connect to PostgreSQL")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_hostile_identifiers_are_quoted(conn, dsn):
    conn.execute("CREATE TABLE y (keep int)")
    conn.execute("INSERT INTO y VALUES (1)")
    conn.execute('CREATE TABLE "x""; drop table y; --" ("id""--" int PRIMARY KEY, "te xt; drop table y" text)')
    conn.execute('INSERT INTO "x""; drop table y; --" VALUES (1, %s), (2, %s), (3, %s)',
                 ("one two three four five six seven", "one two three four five six seven", "other words"))
    proc = cli("index", 'x"; drop table y; --', "--key", 'id"--', "--text", "te xt; drop table y",
                "--dsn", dsn, "--no-progress")
    assert proc.returncode == 0, proc.stderr
    assert "3 rows (3 signed" in proc.stdout
    assert conn.execute("SELECT count(*) FROM y").fetchone()[0] == 1
    assert conn.execute("SELECT source_table, key_column FROM pgdedup.collections").fetchone() == (
        'x"; drop table y; --', 'id"--')
    # the same table by quoted, qualified SQL syntax
    again = pgdedup.index('public."x""; drop table y; --"', 'id"--', ["te xt; drop table y"], dsn=dsn, progress=False)
    assert (again.name, again.signed, again.unchanged) == ('x"; drop table y; --', 0, 3)


def test_null_empty_and_huge_texts(conn, dsn):
    huge = " ".join(f"w{i % 50000}" for i in range(1_500_000))  # ~10 MB, a 50,000-token cycle
    assert len(huge) > 10_000_000
    conn.execute("CREATE TABLE t (id int PRIMARY KEY, a text, b text)")
    conn.execute("INSERT INTO t VALUES (1, NULL, NULL), (2, '', ''), (3, '   \t\n ', NULL), (4, %s, NULL), "
                 "(5, 'short', NULL)", (huge,))
    result = pgdedup.index("t", "id", ["a", "b"], dsn=dsn, progress=False)
    assert result.signed == 5
    rows = {r[0]: r[1:] for r in conn.execute(
        "SELECT row_key::int, feature_count, length(signature) / 16, cardinality(buckets) FROM pgdedup.signatures")}
    k, b = Params().num_perm, Params().bands
    assert rows[1] == rows[2] == rows[3] == (0, 0, 0)
    assert rows[4] == (50_000, k, b)  # the 5-grams of a cycle of 50,000 distinct tokens
    assert rows[5] == (1, k, b)
    assert conn.execute("SELECT count(DISTINCT row_id) FROM pgdedup.band_keys").fetchone()[0] == 2
    assert conn.execute("SELECT length(a) FROM t WHERE id = 4").fetchone()[0] == len(huge)


def test_odd_unicode(conn, dsn):
    texts = {
        1: "Ｆｕｌｌ　ｗｉｄｔｈ text with NBSP\u00a0here and more words",
        2: "full width TEXT with nbsp here   and more words",
        3: "cafe\u0301 déjà vu naïve façade coöperate résumé",
        4: "café déjà vu naïve façade coöperate résumé",
        5: "emoji 🎉🎉 party 👩‍👩‍👧 family 🇯🇵 flag time",
        6: "日本語のテキストと English words 混在 한국어 문장",
        7: "\u200b\ufeff zero width and bidi \u202e text \U0001d400\U0001d401",
    }
    conn.execute("CREATE TABLE t (id int PRIMARY KEY, body text)")
    conn.cursor().executemany("INSERT INTO t VALUES (%s, %s)", list(texts.items()))
    pgdedup.index("t", "id", ["body"], dsn=dsn, progress=False)
    stored = {r[0]: r[1:] for r in conn.execute(
        "SELECT row_key::int, signature, text_hash, feature_count FROM pgdedup.signatures")}
    assert stored[1] == stored[2]  # NFKC + casefold + whitespace make them the same text
    assert stored[3] == stored[4]  # combining acute composes to é
    expected = sign_texts([texts[i] for i in range(1, 8)])
    for i in range(1, 8):
        assert stored[i][0] == ref_sketch(expected.signature(i - 1))
        assert stored[i][2] == expected.feature_counts[i - 1] > 0
    # 日 本 語 の テ キ ス ト と english words 混 在 한국어 문장: 15 tokens -> 11 shingles
    assert stored[6][2] == 11


def test_duplicate_keys_are_refused(conn, dsn):
    conn.execute("CREATE TABLE t (id int, body text)")
    conn.execute("INSERT INTO t VALUES (1, 'a b c'), (1, 'd e f'), (2, 'g h i')")
    with pytest.raises(PgdedupError, match="key column .id. of public.t is not unique: '1' occurs 2 times"):
        pgdedup.index("t", "id", ["body"], dsn=dsn, progress=False)
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 3


def test_null_keys_are_skipped_and_reported(conn, dsn):
    conn.execute("CREATE TABLE t (id int UNIQUE, body text)")
    conn.execute("INSERT INTO t VALUES (1, 'a b c'), (NULL, 'd e f'), (2, 'g h i')")
    result = pgdedup.index("t", "id", ["body"], dsn=dsn, progress=False)
    assert (result.signed, result.null_keys) == (2, 1)
    assert "1 rows with NULL key skipped" in result.summary()


def test_user_mistakes_found_in_review_are_one_line(conn, dsn, tmp_path):
    """A file to write where it cannot be, a count beyond PostgreSQL's integer (it reached the
    server as a bigint: "function ... does not exist"), an empty collection name (it fell back
    to the table's silently), settings for an existing collection without its columns (ignored)."""
    conn.execute("CREATE TABLE t (id int PRIMARY KEY, body text)")
    conn.execute("INSERT INTO t SELECT g, 'some text number ' || g FROM generate_series(1, 20) g")
    one_line_error(cli("index", "t", "--key", "id", "--text", "body", "--name", "", "--dsn", dsn),
                   "a collection name cannot be empty")
    assert not _schema_exists(conn)
    assert cli("index", "t", "--key", "id", "--text", "body", "--no-progress", "--dsn", dsn).returncode == 0
    assert cli("dedupe", "t", "--no-alter", "--dsn", dsn).returncode == 0
    for path in (tmp_path / "missing" / "r.html", tmp_path):
        one_line_error(cli("report", "t", "--html", str(path), "--dsn", dsn), str(path))
    one_line_error(cli("index", "t", "--reindex", "--num-perm", "64", "--dsn", dsn),
                   "--num-perm: settings of a new collection")  # it was silently ignored
    one_line_error(cli("dedupe", "t", "--max-bucket", "99999999999", "--dsn", dsn),
                   "max_bucket must be a positive integer, not 99999999999")
    one_line_error(cli("similar", "t", "--key", "1", "--limit", "99999999999", "--dsn", dsn),
                   "limit must be a positive integer")
    assert "duplicate_of" not in [r[0] for r in conn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = 't'::regclass AND attnum > 0")]
    # TABLE beside --name of an existing collection was ignored: the stored source was indexed
    conn.execute("CREATE TABLE t2 (LIKE t INCLUDING ALL)")
    one_line_error(cli("index", "t2", "--name", "t", "--dsn", dsn),
                   "collection 't' indexes public.t, not public.t2", "--reindex")
    one_line_error(cli("index", "no_such_table", "--name", "t", "--dsn", dsn), "'no_such_table' does not exist")
    assert cli("index", "public.t", "--name", "t", "--no-progress", "--dsn", dsn).returncode == 0
    # --column with --no-alter was ignored without a word
    one_line_error(cli("dedupe", "t", "--no-alter", "--column", "id", "--dsn", dsn), "--no-alter marks none")
