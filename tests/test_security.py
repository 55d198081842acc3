"""The security model of migration 0003, attacked for real: other roles on the same server try to
become superuser through pgdedup, or to read collections they may not read.

1. search_path hijacks: objects another role planted in ``public`` never run inside pgdedup
   (every pgdedup function pins ``search_path = pg_catalog, pg_temp``, and so does every session
   the CLI and the Python API open);
2. stored identifiers are never trusted as SQL (a tampered ``key_type`` is refused, PD006);
3. row-level security: a role sees a collection only when it may read all of its source table;
4. least privilege: a role without CREATE on the database indexes and migrates once the schema is
   at head, and what it may not do fails with one line, never a traceback.

Every test talks to the real server, with real roles (cluster-wide, so suffixed with the test's
database name and dropped at the end).
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import pgdedup
from pgdedup import Params, sign_texts
from pgdedup.schema import HEAD

from clirun import cli, cli_background, one_line_error
from crashes import signatures_fail_after, wait_for
from planted import edit, story
from test_incremental import NEAR_COPY, _marks_column, _marks_fresh, _short_copies_with_a_new_one

SAFE_PATH = "search_path=pg_catalog, pg_temp"


# helpers ---------------------------------------------------------------------------------------

def _is_superuser(conn: psycopg.Connection, role: str) -> bool:
    return conn.execute("SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = %s", (role,)).fetchone()[0]


def _sqlstate(conn: psycopg.Connection, query: str, params=()) -> str | None:
    """The SQLSTATE ``query`` fails with (all its rows fetched), or None when it succeeds."""
    try:
        conn.execute(query, params).fetchall()
    except psycopg.Error as exc:
        if not conn.autocommit:
            conn.rollback()
        return exc.sqlstate
    return None


def _docs(conn: psycopg.Connection, table: str, seed: int, pairs: int = 4, unrelated: int = 12) -> dict[int, str]:
    """A table (id int PRIMARY KEY, body text): rows 2i-1 and 2i (i = 1..pairs) are near-duplicates
    (2 words of 200 substituted, J ≈ 0.9), the rest unrelated. Returns id → text."""
    rng = random.Random(seed)
    texts: dict[int, str] = {}
    for i in range(1, pairs + 1):
        base = story(rng)
        texts[2 * i - 1] = " ".join(base)
        texts[2 * i] = " ".join(edit(rng, base, 2))
    for j in range(unrelated):
        texts[2 * pairs + 1 + j] = " ".join(story(rng))
    conn.execute(sql.SQL("CREATE TABLE {} (id integer PRIMARY KEY, body text)").format(sql.Identifier(table)))
    conn.cursor().executemany(sql.SQL("INSERT INTO {} VALUES (%s, %s)").format(sql.Identifier(table)),
                              list(texts.items()))
    return texts


# 1. search_path hijacks --------------------------------------------------------------------------

def _plant_traps(mallory_dsn: str, mallory: str) -> None:
    """As mallory: functions in ``public`` that overload resolution prefers to the built-ins
    pgdedup calls, each making mallory superuser when a superuser runs it (silently), and
    otherwise returning what the built-in returns."""
    escalate = sql.SQL("""
        BEGIN
            IF (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = current_user) THEN
                EXECUTE pg_catalog.format('ALTER ROLE %I SUPERUSER', {role});
            END IF;
        EXCEPTION WHEN OTHERS THEN NULL;
        END;""").format(role=sql.Literal(mallory))
    with psycopg.connect(mallory_dsn, autocommit=True) as m:
        # cardinality(anyarray) is what pgdedup.similarity calls; an exact integer[] match wins
        m.execute(sql.SQL("""
            CREATE FUNCTION public.cardinality(a integer[]) RETURNS integer LANGUAGE plpgsql AS $f$
            BEGIN {escalate}
                RETURN coalesce(pg_catalog.array_length(a, 1), 0);
            END $f$""").format(escalate=escalate))
        # the loader's concat_ws(E'\n', s.body::text): (text, text) beats concat_ws(text, VARIADIC "any")
        m.execute(sql.SQL("""
            CREATE FUNCTION public.concat_ws(sep text, a text) RETURNS text LANGUAGE plpgsql AS $f$
            BEGIN {escalate}
                RETURN pg_catalog.concat_ws(sep, VARIADIC ARRAY[a]);
            END $f$""").format(escalate=escalate))


def test_planted_functions_in_public_never_run_as_superuser(conn, dsn, make_role):
    mallory, mallory_dsn = make_role("mallory")
    conn.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(sql.Identifier(mallory)))  # as before PG15
    _docs(conn, "docs", seed=11)
    _plant_traps(mallory_dsn, mallory)

    # the whole flow, from the CLI, as superuser (the first index also creates the schema)
    for args in (["index", "docs", "--key", "id", "--text", "body", "--no-progress"],
                 ["dedupe", "docs"],
                 ["similar", "docs", "--key", "1"],
                 ["pairs", "docs", "--verify", "exact"]):
        proc = cli(*args, "--dsn", dsn)
        assert proc.returncode == 0, (args, proc.stderr)
        assert not _is_superuser(conn, mallory), f"pgdedup {args[0]} made {mallory} superuser"
    assert "1,2," in proc.stdout  # the planted pairs were found: the similarity code did run

    # the SQL API from a psql-like session with the default search_path
    assert conn.execute("SHOW search_path").fetchone()[0] == '"$user", public'
    assert conn.execute("SELECT pgdedup.similarity('docs', '1', '2')").fetchone()[0] > 0.8
    assert conn.execute(
        "SELECT pgdedup.similarity(a.signature, b.signature) FROM pgdedup.signatures a, pgdedup.signatures b "
        "WHERE a.row_key = '3' AND b.row_key = '4'").fetchone()[0] > 0.8
    assert conn.execute("SELECT row_key FROM pgdedup.similar('docs', '1')").fetchall() == [("2",)]
    assert ("5", "6") in [r[:2] for r in conn.execute("SELECT * FROM pgdedup.pairs('docs')")]
    assert conn.execute("SELECT duplicates FROM pgdedup.mark_duplicates('docs')").fetchone()[0] == 4
    assert conn.execute("SELECT duplicates FROM pgdedup.find_duplicates('docs')").fetchone()[0] == 4
    assert conn.execute("SELECT count(*) FROM docs WHERE duplicate_of IS NOT NULL").fetchone()[0] == 4
    assert conn.execute("SELECT duplicates FROM pgdedup.status").fetchone()[0] == 4
    assert not _is_superuser(conn, mallory)

    # the traps are armed: the same session calling the built-ins by their plain names springs them
    conn.execute("SELECT cardinality(ARRAY[1, 2, 3])")
    assert _is_superuser(conn, mallory)
    conn.execute(sql.SQL("ALTER ROLE {} NOSUPERUSER").format(sql.Identifier(mallory)))
    conn.execute("SELECT concat_ws(E'\\n', 'x'::text)")
    assert _is_superuser(conn, mallory)


def test_every_pgdedup_function_pins_its_search_path(conn, dsn):
    pgdedup.migrate(dsn)
    rows = conn.execute(
        "SELECT p.oid::regprocedure::text, p.proconfig FROM pg_proc p "
        "WHERE p.pronamespace = 'pgdedup'::regnamespace ORDER BY 1").fetchall()
    assert len(rows) > 20
    unpinned = [name for name, config in rows if SAFE_PATH not in (config or [])]
    assert unpinned == []


# 2. stored identifiers ---------------------------------------------------------------------------

# (key_type, the CLI dedupe modes tried with it: in place [], non-invasive ["--no-alter"])
PAYLOADS = [
    # aimed at ALTER TABLE ... ADD COLUMN duplicate_of <key_type> (marking in place)
    ("integer; ALTER ROLE {role} SUPERUSER; --", [[], ["--no-alter"]]),
    ("integer) ; ALTER ROLE {role} SUPERUSER; --", []),
    # valid SQL spliced into revision 2's create_duplicates_view (CREATE VIEW ... d.duplicate_of::<key_type>
    # AS duplicate_of ...): there it made mallory superuser
    ("integer FROM pgdedup.duplicates d, (SELECT 1 AS one) s; ALTER ROLE {role} SUPERUSER; SELECT NULL::integer",
     [["--no-alter"]]),
]


def test_a_tampered_key_type_is_refused_and_never_run(conn, dsn, make_role):
    _docs(conn, "docs", seed=12)
    pgdedup.index("docs", "id", ["body"], dsn=dsn, progress=False)
    # mallory may write pgdedup.collections (and read the source, so the row is hers to see)
    mallory, mallory_dsn = make_role("mallory")
    for grant in ("GRANT USAGE ON SCHEMA pgdedup TO {}", "GRANT SELECT, UPDATE ON pgdedup.collections TO {}",
                  "GRANT SELECT ON public.docs TO {}"):
        conn.execute(sql.SQL(grant).format(sql.Identifier(mallory)))

    for payload, cli_modes in PAYLOADS:
        key_type = payload.format(role=f'"{mallory}"')
        with psycopg.connect(mallory_dsn, autocommit=True) as m:
            cur = m.execute("UPDATE pgdedup.collections SET key_type = %s WHERE name = 'docs'", (key_type,))
            assert cur.rowcount == 1
        # the CLI, in place and non-invasive: one line, exit 1
        for extra in cli_modes:
            one_line_error(cli("dedupe", "docs", *extra, "--dsn", dsn), "unsupported key type")
        # the SQL functions: PD006
        assert _sqlstate(conn, "SELECT pgdedup.create_duplicates_view('docs')") == "PD006"
        assert _sqlstate(conn, "SELECT * FROM pgdedup.mark_duplicates('docs')") == "PD006"
        # the Python API
        for kwargs in ({}, {"alter": False}, {"alter": False, "verify": "exact"}):
            with pytest.raises(pgdedup.UnsafeOperation, match="unsupported key type"):
                pgdedup.dedupe("docs", dsn=dsn, **kwargs)
        assert not _is_superuser(conn, mallory), f"key_type {key_type!r} made {mallory} superuser"
        # and nothing was written
        assert conn.execute("SELECT count(*) FROM pg_attribute WHERE attrelid = 'public.docs'::regclass "
                            "AND attname = 'duplicate_of'").fetchone()[0] == 0
        assert conn.execute("SELECT to_regclass('pgdedup.docs_duplicates')").fetchone()[0] is None
        assert conn.execute("SELECT mark_column FROM pgdedup.collections").fetchone()[0] is None
        assert conn.execute("SELECT count(*) FROM pgdedup.duplicates").fetchone()[0] == 0


# 3. row-level security ---------------------------------------------------------------------------

def _collection_ids(conn) -> dict[str, int]:
    return dict(conn.execute("SELECT name, collection_id FROM pgdedup.collections"))


def test_a_role_sees_a_collection_only_when_it_may_read_all_of_its_source(conn, dsn, make_role):
    secret = _docs(conn, "secret", seed=21)
    _docs(conn, "open_docs", seed=22)
    for table in ("secret", "open_docs"):
        pgdedup.index(table, "id", ["body"], dsn=dsn, progress=False)
        pgdedup.dedupe(table, alter=False, dsn=dsn)  # rows in pgdedup.duplicates and pgdedup.runs too
    ids = _collection_ids(conn)
    counts = {t: conn.execute(f"SELECT count(*) FROM pgdedup.{t} WHERE collection_id = %s", (ids["secret"],))
              .fetchone()[0] for t in ("signatures", "band_keys", "duplicates", "runs")}
    assert all(counts.values()), counts
    reader, reader_dsn = make_role("reader")
    for grant in ("GRANT USAGE ON SCHEMA pgdedup TO {}", "GRANT SELECT ON ALL TABLES IN SCHEMA pgdedup TO {}",
                  "GRANT SELECT ON public.open_docs TO {}"):
        conn.execute(sql.SQL(grant).format(sql.Identifier(reader)))
    params = Params()  # the collections' own settings (indexed with the defaults)
    signed = sign_texts([secret[1]], params)
    signature, buckets = signed.signature(0).tolist(), signed.buckets[0].tolist()

    def open_collection_answers(r: psycopg.Connection) -> None:
        assert r.execute("SELECT row_key FROM pgdedup.similar('open_docs', '1')").fetchall() == [("2",)]
        assert ("3", "4") in [p[:2] for p in r.execute("SELECT * FROM pgdedup.pairs('open_docs')")]
        assert r.execute("SELECT count(*) FROM pgdedup.signatures WHERE collection_id = %s",
                         (ids["open_docs"],)).fetchone()[0] == 20

    def refused(r: psycopg.Connection) -> None:
        for t in counts:
            assert r.execute(f"SELECT count(*) FROM pgdedup.{t} WHERE collection_id = %s",
                             (ids["secret"],)).fetchone()[0] == 0, t
        assert r.execute("SELECT count(*) FROM pgdedup.signatures").fetchone()[0] == 20  # open_docs' only
        assert r.execute("SELECT array_agg(name) FROM pgdedup.collections").fetchone()[0] == ["open_docs"]
        assert r.execute("SELECT array_agg(name) FROM pgdedup.status").fetchone()[0] == ["open_docs"]
        assert _sqlstate(r, "SELECT * FROM pgdedup.similar('secret', '1')") == "PD001"
        assert _sqlstate(r, "SELECT * FROM pgdedup.pairs('secret')") == "PD001"
        assert _sqlstate(r, "SELECT pgdedup.similarity('secret', '1', '2')") == "PD001"
        assert _sqlstate(r, "SELECT * FROM pgdedup.similar_to('secret', %s, %s)", (signature, buckets)) == "PD001"
        assert r.execute("SELECT count(*) FROM pgdedup.verified_pairs(%s, 0.1)", (ids["secret"],)).fetchone()[0] == 0
        with pytest.raises(pgdedup.CollectionNotFound, match=r"\(collections: open_docs\)"):  # no names leak
            pgdedup.similar("secret", text=secret[1], dsn=reader_dsn)
        with pytest.raises(pgdedup.CollectionNotFound):
            list(pgdedup.pairs("secret", dsn=reader_dsn))
        assert [s["name"] for s in pgdedup.status(dsn=reader_dsn)] == ["open_docs"]
        open_collection_answers(r)

    with psycopg.connect(reader_dsn, autocommit=True) as r:
        refused(r)

        # allowed to read the source: everything answers
        conn.execute(sql.SQL("GRANT SELECT ON public.secret TO {}").format(sql.Identifier(reader)))
        assert r.execute("SELECT array_agg(name ORDER BY name) FROM pgdedup.collections").fetchone()[0] == [
            "open_docs", "secret"]
        for t, n in counts.items():
            assert r.execute(f"SELECT count(*) FROM pgdedup.{t} WHERE collection_id = %s",
                             (ids["secret"],)).fetchone()[0] == n, t
        assert r.execute("SELECT row_key FROM pgdedup.similar('secret', '1')").fetchall() == [("2",)]
        assert ("7", "8") in [p[:2] for p in r.execute("SELECT * FROM pgdedup.pairs('secret')")]
        assert r.execute("SELECT pgdedup.similarity('secret', '1', '2')").fetchone()[0] > 0.8
        assert [k for k, _ in r.execute("SELECT * FROM pgdedup.similar_to('secret', %s, %s)",
                                        (signature, buckets))] == ["1", "2"]
        assert [k for k, _ in pgdedup.similar("secret", text=secret[1], dsn=reader_dsn)] == ["1", "2"]
        assert sorted(s["name"] for s in pgdedup.status(dsn=reader_dsn)) == ["open_docs", "secret"]
        open_collection_answers(r)

        # a row-level policy hides some of the source's rows from the reader: refused again
        conn.execute("ALTER TABLE public.secret ENABLE ROW LEVEL SECURITY")
        conn.execute(sql.SQL("CREATE POLICY evens ON public.secret FOR SELECT TO {} USING (id % 2 = 0)")
                     .format(sql.Identifier(reader)))
        assert r.execute("SELECT count(*) FROM public.secret").fetchone()[0] == 10  # it may read some rows
        refused(r)

    # the owner still sees everything
    assert conn.execute("SELECT count(*) FROM pgdedup.signatures").fetchone()[0] == 40


# 4. least privilege ------------------------------------------------------------------------------

APP_GRANTS = ("GRANT USAGE ON SCHEMA pgdedup TO {}",
              "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgdedup TO {}",
              "GRANT USAGE ON ALL SEQUENCES IN SCHEMA pgdedup TO {}",
              "GRANT EXECUTE ON FUNCTION pgdedup.analyze_as_owner(text[]) TO {}",
              "GRANT SELECT ON public.docs TO {}")


@pytest.fixture
def app(conn, dsn, make_role) -> tuple[str, str, dict[int, str]]:
    """A LOGIN role without CREATE on the database, granted the use of pgdedup's tables (migrated
    to head by the superuser) and SELECT on ``docs`` (owned by the superuser): (role, DSN, texts)."""
    name, app_dsn = make_role("app")
    assert not conn.execute("SELECT has_database_privilege(%s, current_database(), 'CREATE')",
                            (name,)).fetchone()[0]
    pgdedup.migrate(dsn)
    texts = _docs(conn, "docs", seed=31)
    for grant in APP_GRANTS:
        conn.execute(sql.SQL(grant).format(sql.Identifier(name)))
    return name, app_dsn, texts


def test_a_role_without_create_gets_one_line_errors_and_migrates_at_head(conn, dsn, make_role):
    name, app_dsn = make_role("app")
    line = one_line_error(cli("migrate", "--dsn", app_dsn))  # a fresh database: the schema is needed
    assert "permission denied" in line
    assert conn.execute("SELECT to_regnamespace('pgdedup')").fetchone()[0] is None

    pgdedup.migrate(dsn)
    texts = _docs(conn, "docs", seed=32)
    for grant in APP_GRANTS:
        conn.execute(sql.SQL(grant).format(sql.Identifier(name)))
    proc = cli("migrate", "--dsn", app_dsn)  # at head: nothing to create
    assert proc.returncode == 0, proc.stderr
    assert f"pgdedup schema at revision {HEAD}" in proc.stdout

    # an index run that has nothing to write needs no CREATE either (the COPY case: see below)
    pgdedup.index("docs", "id", ["body"], dsn=dsn, progress=False)
    proc = cli("index", "docs", "--key", "id", "--text", "body", "--no-progress", "--dsn", app_dsn)
    assert proc.returncode == 0, proc.stderr
    assert f"indexed docs: {len(texts)} rows (0 signed, {len(texts)} unchanged, 0 removed)" in proc.stdout

    # marking a table app does not own: refused in one line, nothing written
    line = one_line_error(cli("dedupe", "docs", "--dsn", app_dsn))
    assert "must be owner of table docs" in line
    assert conn.execute("SELECT count(*) FROM pg_attribute WHERE attrelid = 'public.docs'::regclass "
                        "AND attname = 'duplicate_of'").fetchone()[0] == 0
    assert conn.execute("SELECT mark_column FROM pgdedup.collections").fetchone()[0] is None




def test_a_role_without_create_indexes_once_the_schema_is_at_head(conn, app):
    name, app_dsn, texts = app
    proc = cli("index", "docs", "--key", "id", "--text", "body", "--no-progress", "--dsn", app_dsn)
    assert proc.returncode == 0, proc.stderr
    assert f"indexed docs: {len(texts)} rows ({len(texts)} signed" in proc.stdout
    assert conn.execute("SELECT count(*) FROM pgdedup.signatures").fetchone()[0] == len(texts)
    assert conn.execute("SELECT count(*) FROM pgdedup.runs WHERE kind = 'index'").fetchone()[0] == 1


@pytest.mark.parametrize("truncate", [False, True], ids=["without TRUNCATE", "granted TRUNCATE"])
def test_a_runtime_roles_staged_load_spares_staged_keys_it_cannot_see(conn, dsn, app, monkeypatch, truncate):
    """A first load that stages its band keys (forced here for small tables) empties the staging
    table by DELETE for a role under row-level security, even one granted TRUNCATE (which would
    ignore the policies): the staged keys of a collection the role may not read (left by the
    owner's crashed load of ``secret``) survive its two sessions' moves and its last call, and
    the owner's resume moves them in."""
    from pgdedup import loader
    name, app_dsn, texts = app
    if truncate:
        conn.execute(sql.SQL("GRANT TRUNCATE ON pgdedup.band_keys_staged TO {}").format(sql.Identifier(name)))
    monkeypatch.setattr(loader, "DIRECT_SHARE_OF_BUFFERS", 0.0)
    secret = _docs(conn, "secret", seed=33)
    with signatures_fail_after(conn, 4), pytest.raises(psycopg.Error, match="simulated crash"):
        pgdedup.index("secret", "id", ["body"], dsn=dsn, chunk_size=4, progress=False)
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys_staged").fetchone()[0] == 4 * 16

    run = pgdedup.index("docs", "id", ["body"], dsn=app_dsn, workers=2, chunk_size=4, progress=False)
    assert run.signed == len(texts)
    assert run.stats["band_keys"] == "inserted"  # band_keys is empty, but not the role's to rebuild
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys_staged").fetchone()[0] == 4 * 16
    pgdedup.index("secret", dsn=dsn, progress=False)
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys_staged").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys").fetchone()[0] == 16 * (len(texts) + len(secret))


def test_a_role_without_create_verifies_exactly(conn, dsn, app):
    name, app_dsn, texts = app
    pgdedup.index("docs", "id", ["body"], dsn=dsn, progress=False)
    proc = cli("pairs", "docs", "--verify", "exact", "--dsn", app_dsn)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[1:] and proc.stdout.splitlines()[1].startswith("1,2,")


@pytest.mark.parametrize("kept", ["SELECT, INSERT, DELETE", "", "SELECT", "SELECT, INSERT", "INSERT, DELETE"],
                         ids=["granted the work table", "granted before revision 19", "select only",
                              "no delete", "no select"])
def test_a_runtime_role_dedupes_with_or_without_the_parallel_work_table(conn, dsn, app, kept):
    """A role granted pgdedup's tables before revision 19 (GRANT ... ON ALL TABLES covers the
    tables of its moment) has no privilege on pgdedup.candidates, and one may hold only some of
    the three it needs there: its full dedupe estimates in one process instead (revision 19
    failed with "permission denied" for a role holding some but not all). Either way it marks
    what the owner marks and leaves the work table empty."""
    name, app_dsn, texts = app
    conn.execute(sql.SQL("REVOKE ALL ON pgdedup.candidates FROM {}").format(sql.Identifier(name)))
    if kept:
        conn.execute(sql.SQL("GRANT {} ON pgdedup.candidates TO {}").format(sql.SQL(kept), sql.Identifier(name)))
    pgdedup.index("docs", "id", ["body"], dsn=dsn, progress=False)
    marks = 'SELECT id, duplicate_of FROM pgdedup."docs_duplicates" ORDER BY id'
    pgdedup.dedupe("docs", alter=False, verify="estimate", dsn=dsn)
    expected = conn.execute(marks).fetchall()
    conn.execute("DELETE FROM pgdedup.duplicates")
    assert pgdedup.dedupe("docs", alter=False, verify="estimate", full=True, dsn=app_dsn).kind == "full"
    assert conn.execute(marks).fetchall() == expected == [(2, 1), (4, 3), (6, 5), (8, 7)]
    assert conn.execute("SELECT count(*) FROM pgdedup.candidates").fetchone()[0] == 0


def test_the_runtime_role_works_the_living_path(conn, dsn, app):
    """The owner tracks; the runtime role (USAGE + table privileges, no CREATE, not the table's
    owner) indexes from the queue, dedupes incrementally, checks and adds; its writes to the
    table are tracked without any grant on pgdedup's queue beyond the documented ones."""
    name, app_dsn, texts = app
    conn.execute(sql.SQL("GRANT INSERT, UPDATE ON public.docs TO {}").format(sql.Identifier(name)))
    pgdedup.index("docs", "id", ["body"], dsn=dsn, progress=False)
    one_line_error(cli("track", "docs", "--dsn", app_dsn), "needs its owner")
    pgdedup.track("docs", dsn=dsn)  # the owner
    pgdedup.index("docs", dsn=app_dsn, progress=False)
    assert pgdedup.dedupe("docs", alter=False, dsn=dsn).kind == "full"  # the owner makes the view once
    with psycopg.connect(app_dsn) as runtime:
        runtime.execute("INSERT INTO public.docs VALUES (9001, %s)", (texts[1],))
        coll = pgdedup.collection("docs", runtime)
        assert coll.check(texts[1])[0][1] == 1.0
        assert coll.add(9001) == 1
    runtime_dedupe = pgdedup.dedupe("docs", alter=False, dsn=app_dsn)
    assert runtime_dedupe.kind == "incremental"
    assert conn.execute("SELECT count(*) FROM pgdedup.pending").fetchone()[0] == 0


def test_add_never_copies_through_a_temp_table_another_role_left_on_the_session(conn, dsn, app, make_role):
    """A role under pgdedup's row-level security adds rows by COPY into a temp table, then one
    INSERT. It reused one of that name already on the session: on a session a pool shares
    between roles, another role's table there, with a trigger that ran with the adding role's
    rights. Now the table is made for the copy, under a name no one can foresee, and dropped after it."""
    name, app_dsn, texts = app
    evil, _ = make_role("evil")
    conn.execute(sql.SQL("GRANT INSERT ON public.docs TO {}").format(sql.Identifier(name)))
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA pgdedup TO {0}; GRANT SELECT ON pgdedup.signatures TO {0}")
                 .format(sql.Identifier(evil)))
    conn.execute("CREATE TABLE loot (who text)")
    conn.execute(sql.SQL("GRANT INSERT ON loot TO {}, {}").format(sql.Identifier(evil), sql.Identifier(name)))
    pgdedup.index("docs", "id", ["body"], dsn=dsn, progress=False)
    with psycopg.connect(dsn) as pooled:  # one server session, two roles in turn
        pooled.execute(sql.SQL("INSERT INTO public.docs VALUES (9001, %s), (9002, %s)"), (texts[1], texts[2]))
        pooled.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(name)))
        assert pgdedup.collection("docs", pooled).add(9001) == 1
        pooled.commit()
        assert pooled.execute("SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema() "
                              "AND relkind = 'r'").fetchone()[0] == 0, "no temp table left after the commit"
        pooled.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(evil)))
        pooled.execute("CREATE TEMP TABLE pgdedup_copy_signatures (LIKE pgdedup.signatures)")
        pooled.execute("CREATE FUNCTION pg_temp.grab() RETURNS trigger LANGUAGE plpgsql AS "
                       "$$ BEGIN INSERT INTO public.loot VALUES (current_user); RETURN NEW; END $$")
        pooled.execute("CREATE TRIGGER grab BEFORE INSERT ON pg_temp.pgdedup_copy_signatures "
                       "FOR EACH ROW EXECUTE FUNCTION pg_temp.grab()")
        pooled.execute(sql.SQL("GRANT ALL ON pg_temp.pgdedup_copy_signatures TO {}").format(sql.Identifier(name)))
        pooled.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(name)))
        assert pgdedup.collection("docs", pooled).add(9002) == 1  # through a table of its own
        pooled.commit()
    assert conn.execute("SELECT count(*) FROM loot").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM pgdedup.signatures WHERE row_key = '9002'").fetchone()[0] == 1


#: pgdedup's temp relations another role could leave on a session, as views calling a temp
#: function of that role's (explicitly qualified: the only way pg_temp functions are found).
_PLANTED = {
    "pgdedup_fixed": "SELECT NULL::bigint AS row_id, NULL::text AS row_key, pg_temp.spy() AS text_hash, NULL::bigint AS rnk",
    # a view computes the transaction_timestamp() its marker is compared with at each read
    "pgdedup_estimated_for": "SELECT pg_temp.spy()::integer AS collection_id, 100 AS max_bucket, NULL::text AS keep_order, "
                             "0::bigint AS index_version, NULL::bigint AS change_seq, transaction_timestamp() AS started",
}


@pytest.mark.parametrize("planted", sorted(_PLANTED))
@pytest.mark.parametrize("call", ["find_duplicates", "update_duplicates"])
def test_a_dedupe_refuses_a_session_with_another_roles_pgdedup_temp_relations(conn, dsn, make_role, planted, call):
    """A session a pool shares between roles: one leaves a temp view named like pgdedup's state.
    walk() made pg_temp.pgdedup_fixed only IF NOT EXISTS (the view was read, its function run
    with the rights of the superuser who deduped next), and an auto run's marker was trusted by
    its content. Since revision 53 pgdedup refuses the session (PD006), running nothing of it."""
    evil, _ = make_role("evil", "NOLOGIN")
    pgdedup.migrate(dsn)
    _docs(conn, "docs", seed=33)
    pgdedup.index("docs", "id", ["body"], dsn=dsn, progress=False)
    conn.execute("CREATE TABLE loot (who text)")
    conn.execute(sql.SQL("GRANT INSERT ON loot TO {}").format(sql.Identifier(evil)))
    with psycopg.connect(dsn) as pooled:
        pooled.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(evil)))
        pooled.execute("CREATE FUNCTION pg_temp.spy() RETURNS bigint LANGUAGE sql VOLATILE AS "
                       "$$ INSERT INTO public.loot SELECT current_user RETURNING 1::bigint $$")
        pooled.execute(sql.SQL("CREATE TEMP VIEW {} AS " + _PLANTED[planted]).format(sql.Identifier(planted)))
        pooled.execute("RESET ROLE")
        pooled.commit()
        statement = {"find_duplicates": "SELECT * FROM pgdedup.find_duplicates('docs')",
                     "update_duplicates": "SELECT * FROM pgdedup.update_duplicates('docs', false, p_verify => 'auto', "
                                          "p_full => true)"}[call]
        with pytest.raises(psycopg.Error, match=f"will not work on this session: pg_temp.{planted}") as raised:
            pooled.execute(statement)
        assert raised.value.sqlstate == "PD006"
        pooled.rollback()
        with pytest.raises(pgdedup.UnsafeOperation, match="DISCARD TEMP"):
            pgdedup.dedupe("docs", alter=False, dsn=pooled)
        pooled.rollback()
        pooled.execute("DISCARD TEMP")  # what the hint says: then the session works again
        assert pgdedup.dedupe("docs", alter=False, dsn=pooled).kind == "full"
        pooled.commit()
    assert conn.execute("SELECT count(*) FROM loot").fetchone()[0] == 0


def test_pgdedups_own_temp_tables_of_a_role_that_may_act_as_the_next_are_trusted(conn, dsn, app, make_role):
    """pgdedup's temp tables last to the commit: in one transaction, a call as one superuser and
    then, after SET ROLE, one as another works (revision 53 refused it; revision 55 trusts a
    table whose owner may act as the current role); a runtime role's tables are refused to a
    superuser after it, as any table of a role that may not act as the current one."""
    name, _, _ = app
    admin, _ = make_role("admin", "SUPERUSER")
    pgdedup.index("docs", "id", ["body"], dsn=dsn, progress=False)
    find = "SELECT count(*) FROM pgdedup.find_duplicates('docs')"
    with psycopg.connect(dsn) as session:
        session.execute(find)
        session.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(admin)))
        session.execute(find)
        session.rollback()
        session.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(name)))
        session.execute(find)
        session.execute("RESET ROLE")
        with pytest.raises(psycopg.Error, match=f"of role {name}, which may not act as role postgres"):
            session.execute(find)
        session.rollback()
        session.execute(find)  # the runtime role's tables went with its transaction


def test_a_member_that_may_not_set_role_is_not_trusted(conn, dsn, app, make_role):
    """From PostgreSQL 16 on a role may be a member of another without its rights or SET ROLE
    (WITH INHERIT FALSE, SET FALSE): its temp tables are not trusted (revision 55 trusted any
    member: a planted table's row-level policy ran its function as the next role)."""
    if conn.info.server_version < 160000:
        pytest.skip("PostgreSQL 16+: before it, every member may SET ROLE")
    name, _, _ = app
    member, _ = make_role("member", "NOLOGIN")
    conn.execute(sql.SQL("GRANT {} TO {} WITH INHERIT FALSE, SET FALSE").format(sql.Identifier(name), sql.Identifier(member)))
    pgdedup.index("docs", "id", ["body"], dsn=dsn, progress=False)
    with psycopg.connect(dsn) as session:
        session.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(member)))
        session.execute("CREATE TEMP TABLE pgdedup_estimated_for (x int)")
        session.execute("RESET ROLE")
        session.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(name)))
        with pytest.raises(psycopg.Error, match=f"of role {member}, which may not act as role {name}"):
            session.execute("SELECT count(*) FROM pgdedup.find_duplicates('docs')")


def test_a_runtime_role_goes_on_from_the_step_that_needed_checks(conn, dsn, make_role, capfd):
    """A role without CREATE that does not own the table runs an incremental auto dedupe that
    stops at a closure step for exact checks and goes on from it (revisions 39-40: temp tables
    kept between the calls, their fingerprint read from pg_stat_get_xact_*): the same marks as a
    fresh full run."""
    _short_copies_with_a_new_one(conn, dsn, new_body=NEAR_COPY)
    name, app_dsn = make_role("app")
    for grant in APP_GRANTS + ("GRANT UPDATE ON public.docs TO {}",):
        conn.execute(sql.SQL(grant).format(sql.Identifier(name)))
    capfd.readouterr()
    result = pgdedup.dedupe("docs", keep_order="id", max_bucket=5, dsn=app_dsn, progress=True)
    stages = capfd.readouterr().err
    assert re.search(r"going on from closure step 1\b", stages), stages
    assert result.kind == "incremental"
    marks = _marks_column(conn)
    assert marks[100] is not None, "the new copy is a near-duplicate"
    assert marks == _marks_fresh(conn, dsn, "id", 5)


# 5. a table's owner is not trusted with the rights of whoever runs pgdedup (revision 21) -----------

@pytest.fixture
def tenant(conn, make_role) -> Iterator[tuple[str, str]]:
    """A role owning schema ``tenant`` with table ``tenant.t (id int PRIMARY KEY, body text)``,
    a composite type ``tenant.evil`` and a cast from it to text whose function tries to make
    the role a superuser when a superuser runs it: (role, DSN)."""
    name, tenant_dsn = make_role("tenant")
    conn.execute(sql.SQL("CREATE SCHEMA tenant AUTHORIZATION {}").format(sql.Identifier(name)))
    with psycopg.connect(tenant_dsn, autocommit=True) as t:
        t.execute("CREATE TABLE tenant.t (id int PRIMARY KEY, body text)")
        t.execute("INSERT INTO tenant.t SELECT g, 'some text about item number ' || g FROM generate_series(1, 30) g")
        t.execute("CREATE TYPE tenant.evil AS (v text)")
        t.execute(sql.SQL("""CREATE FUNCTION tenant.evil_text(tenant.evil) RETURNS text LANGUAGE plpgsql AS $$
            BEGIN
                IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
                    EXECUTE 'ALTER ROLE {} SUPERUSER';
                END IF;
                RETURN ($1).v;
            END $$""").format(sql.Identifier(name)))
        t.execute("CREATE CAST (tenant.evil AS text) WITH FUNCTION tenant.evil_text(tenant.evil)")
    yield name, tenant_dsn
    conn.execute("DROP SCHEMA tenant CASCADE")  # the cast too, which DROP OWNED leaves


def test_a_keep_order_column_of_the_owners_domain_runs_none_of_its_code(conn, dsn, tenant):
    """Revision 57 asked whether a keep-order column sorts by planning a cast of NULL to its
    type: for a domain that folds the IMMUTABLE calls in the domain's CHECK, so the table owner's
    function ran as the superuser running `dedupe --keep-order` (and `watch`) and made the owner
    a superuser. Revision 59 asks the base type; the decision's ORDER BY runs nothing either."""
    name, tenant_dsn = tenant
    _plant_function(name, tenant_dsn)
    with psycopg.connect(tenant_dsn, autocommit=True) as t:
        t.execute("CREATE DOMAIN tenant.stamp AS integer CHECK (tenant.k() IS NOT NULL)")
        t.execute("CREATE DOMAIN tenant.doc AS json CHECK (tenant.k() IS NOT NULL)")
        t.execute("CREATE TYPE tenant.pair AS (a tenant.stamp, b tenant.doc)")
        t.execute("ALTER TABLE tenant.t ADD COLUMN ts tenant.stamp, ADD COLUMN meta tenant.doc, "
                  "ADD COLUMN stamps tenant.stamp[], ADD COLUMN both_ tenant.pair")
    assert not _is_superuser(conn, name)
    pgdedup.index("tenant.t", "id", ["body"], name="t", dsn=dsn, progress=False)
    for order in ("ts, id", "stamps, id"):
        pgdedup.dedupe("t", keep_order=order, alter=False, dsn=dsn)
    for column, kind in (("meta", "tenant.doc"), ("both_", "tenant.pair")):  # json inside: cannot be sorted
        with pytest.raises(pgdedup.InvalidArgument, match=f'keep order column "{column}" is of type {kind}, which cannot'):
            pgdedup.dedupe("t", keep_order=column, alter=False, dsn=dsn)
    assert not _is_superuser(conn, name)


def test_a_text_column_of_the_owners_own_type_is_never_read(conn, dsn, tenant):
    name, tenant_dsn = tenant
    with psycopg.connect(tenant_dsn, autocommit=True) as t:
        t.execute("ALTER TABLE tenant.t ADD COLUMN extra tenant.evil")
        t.execute("UPDATE tenant.t SET extra = row('more words')::tenant.evil")
    with pytest.raises(pgdedup.UnsafeOperation, match=f'column .extra. .*tenant.evil, made by {name}'):
        pgdedup.index("tenant.t", "id", ["body", "extra"], dsn=dsn, progress=False)
    assert not _is_superuser(conn, name)
    assert conn.execute("SELECT to_regnamespace('pgdedup')").fetchone()[0] is None  # refused before any write
    # the owner indexing its own table may: the code is its own
    pgdedup.migrate(dsn)
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA pgdedup TO {}").format(sql.Identifier(name)))
    conn.execute(sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgdedup TO {}").format(
        sql.Identifier(name)))
    conn.execute(sql.SQL("GRANT USAGE ON ALL SEQUENCES IN SCHEMA pgdedup TO {}").format(sql.Identifier(name)))
    with pytest.warns(pgdedup.StatisticsWarning, match="is not granted pgdedup.analyze_as_owner"):
        assert pgdedup.index("tenant.t", "id", ["body", "extra"], dsn=tenant_dsn, progress=False).signed == 30


def test_a_source_changed_by_its_owner_after_indexing_is_refused_unread(conn, dsn, tenant):
    name, tenant_dsn = tenant
    pgdedup.index("tenant.t", "id", ["body"], name="t", dsn=dsn, progress=False)
    # the text column's type swapped for the owner's own
    with psycopg.connect(tenant_dsn, autocommit=True) as t:
        t.execute("ALTER TABLE tenant.t ALTER COLUMN body TYPE tenant.evil USING row(body)::tenant.evil")
        t.execute("UPDATE tenant.t SET body = row('changed')::tenant.evil WHERE id = 1")
    one_line_error(cli("index", "t", "--no-progress", "--dsn", dsn), "column 'body'", "tenant.evil", name)
    for call in (lambda: pgdedup.dedupe("t", alter=False, dsn=dsn), lambda: pgdedup.explain("t", "1", "2", dsn=dsn)):
        with pytest.raises(pgdedup.UnsafeOperation, match="tenant.evil"):
            call()
    assert not _is_superuser(conn, name)
    # the table swapped for a view of the same name that calls the owner's function
    with psycopg.connect(tenant_dsn, autocommit=True) as t:
        t.execute("ALTER TABLE tenant.t RENAME TO t_old")
        t.execute("CREATE VIEW tenant.t AS SELECT id, tenant.evil_text(body) AS body FROM tenant.t_old")
    one_line_error(cli("index", "t", "--no-progress", "--dsn", dsn), "tenant.t is a view owned by", name)
    assert not _is_superuser(conn, name)


def test_the_tracking_trigger_never_casts_a_key_of_another_type(conn, dsn, tenant):
    """The trigger runs as pgdedup's owner (here a superuser): a key column changed to the
    table owner's own type must not have its cast run by the owner's next INSERT."""
    name, tenant_dsn = tenant
    pgdedup.index("tenant.t", "id", ["body"], name="t", dsn=dsn, progress=False)
    pgdedup.track("t", dsn=dsn)
    conn.execute("DELETE FROM pgdedup.queue")
    with psycopg.connect(tenant_dsn, autocommit=True) as t:
        t.execute("INSERT INTO tenant.t VALUES (31, 'a row while the key is an integer')")
        t.execute("ALTER TABLE tenant.t DROP CONSTRAINT t_pkey")
        t.execute("ALTER TABLE tenant.t ALTER COLUMN id TYPE tenant.evil USING row(id::text)::tenant.evil")
        t.execute("INSERT INTO tenant.t VALUES (row('999')::tenant.evil, 'a row with the new key')")
        t.execute("UPDATE tenant.t SET body = body || '!' WHERE (id).v = '1'")
    assert not _is_superuser(conn, name)
    assert conn.execute("SELECT row_key FROM pgdedup.queue ORDER BY seq").fetchall() == [("31",), (None,), (None,)]
    one_line_error(cli("index", "t", "--no-progress", "--dsn", dsn), "key column 'id'", "tenant.evil")
    assert not _is_superuser(conn, name)


def test_a_source_in_a_schema_a_role_may_not_use_hides_only_that_collection(conn, dsn, app):
    """Before revision 21 the row-level security policy raised "permission denied for schema"
    for it, and every query of every role without USAGE there failed."""
    name, app_dsn, texts = app
    conn.execute("CREATE SCHEMA private")
    conn.execute("CREATE TABLE private.notes (id int PRIMARY KEY, body text)")
    conn.execute("INSERT INTO private.notes SELECT g, 'confidential note number ' || g FROM generate_series(1, 20) g")
    pgdedup.index("private.notes", "id", ["body"], name="notes", dsn=dsn, progress=False)
    proc = cli("index", "docs", "--key", "id", "--text", "body", "--no-progress", "--dsn", app_dsn)
    assert proc.returncode == 0, proc.stderr
    status = cli("status", "--json", "--dsn", app_dsn)
    assert status.returncode == 0, status.stderr
    assert "notes" not in status.stdout and '"docs"' in status.stdout
    one_line_error(cli("similar", "notes", "--text", "confidential note", "--dsn", app_dsn), "no collection named 'notes'")
    with psycopg.connect(app_dsn) as a:
        assert a.execute("SELECT count(*) FROM pgdedup.collections").fetchone()[0] == 1


def test_status_for_a_role_that_sees_every_collection_without_usage_of_their_schemas(conn, dsn, make_role):
    """Before revision 23 the status view looked sources up with to_regclass, which raises for a
    schema the role may not use: a role that sees every collection (BYPASSRLS, like the tables'
    owner) could not read the view at all."""
    conn.execute("CREATE SCHEMA private")
    conn.execute("CREATE TABLE private.notes (id int PRIMARY KEY, body text)")
    conn.execute("INSERT INTO private.notes SELECT g, 'note ' || g FROM generate_series(1, 5) g")
    pgdedup.index("private.notes", "id", ["body"], name="notes", dsn=dsn, progress=False)
    auditor, auditor_dsn = make_role("auditor", "LOGIN BYPASSRLS")
    for grant in ("GRANT USAGE ON SCHEMA pgdedup TO {}", "GRANT SELECT ON ALL TABLES IN SCHEMA pgdedup TO {}"):
        conn.execute(sql.SQL(grant).format(sql.Identifier(auditor)))
    with psycopg.connect(auditor_dsn) as a:
        assert a.execute("SELECT name, source, source_missing FROM pgdedup.status").fetchall() == [
            ("notes", "private.notes", False)]
    conn.execute("DROP TABLE private.notes")
    with psycopg.connect(auditor_dsn) as a:
        assert a.execute("SELECT source_missing FROM pgdedup.status").fetchall() == [(True,)]


def test_a_type_change_racing_the_check_is_seen_before_any_read(conn, dsn, tenant):
    """The owner's ALTER, not committed yet when pgdedup checks the table, commits while pgdedup
    waits for the table: the check is made again under the lock, and nothing is read."""
    name, tenant_dsn = tenant
    pgdedup.index("tenant.t", "id", ["body"], name="t", dsn=dsn, progress=False)
    with psycopg.connect(tenant_dsn) as t:
        t.execute("ALTER TABLE tenant.t ALTER COLUMN body TYPE tenant.evil USING row(body)::tenant.evil")
        run = cli_background("index", "t", "--no-progress", "--dsn", dsn)
        wait_for(conn, "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = "
                       "'pgdedup index (source lock)' AND wait_event_type = 'Lock')", run=run)
        t.commit()
    out, err = run.communicate(timeout=60)
    assert run.returncode == 1 and "tenant.evil" in err and len(err.strip().splitlines()) == 1, err
    assert not _is_superuser(conn, name)


def test_views_and_policies_that_would_run_the_owners_code_are_refused(conn, dsn, tenant, app):
    """A view another role's code hides in: a superuser's view calling the owner's function, a
    superuser's view over the owner's view, a superuser's view casting the owner's type; and the
    owner's row-level security policy, which applies to a runner that is not a superuser."""
    name, tenant_dsn = tenant
    with psycopg.connect(tenant_dsn, autocommit=True) as t:
        t.execute("ALTER TABLE tenant.t ADD COLUMN extra tenant.evil")
        t.execute("CREATE VIEW tenant.tv AS SELECT id, tenant.evil_text(row(body)::tenant.evil) AS body FROM tenant.t")
    views = {
        "calls": "SELECT id, tenant.evil_text(row(body)::tenant.evil) AS body FROM tenant.t",
        "over": "SELECT * FROM tenant.tv",
        "casts": "SELECT id, extra::text AS body FROM tenant.t",
    }
    for view, query in views.items():
        conn.execute(f"CREATE VIEW public.{view} AS {query}")
        with pytest.raises(pgdedup.UnsafeOperation, match=f"which {name} made"):
            pgdedup.index(view, "id", ["body"], dsn=dsn, progress=False)
    assert not _is_superuser(conn, name)
    # a policy: the runtime role (not a superuser) may read the table, under the owner's policy
    runner, runner_dsn, _ = app
    with psycopg.connect(tenant_dsn, autocommit=True) as t:
        t.execute("CREATE TABLE tenant.calls (who text)")
        t.execute("GRANT INSERT ON tenant.calls TO PUBLIC")
        t.execute("CREATE FUNCTION tenant.spy() RETURNS boolean LANGUAGE sql AS "
                  "'INSERT INTO tenant.calls VALUES (current_user) RETURNING true'")
        t.execute("ALTER TABLE tenant.t ENABLE ROW LEVEL SECURITY")
        t.execute("CREATE POLICY p ON tenant.t USING (tenant.spy())")
        t.execute(sql.SQL("GRANT USAGE ON SCHEMA tenant TO {r}; GRANT SELECT, UPDATE ON tenant.t TO {r}").format(
            r=sql.Identifier(runner)))  # (UPDATE: to hold the table while checking it, revision 28)
    one_line_error(cli("index", "tenant.t", "--key", "id", "--text", "body", "--no-progress", "--dsn", runner_dsn),
                   "row-level security policies of tenant.t")
    assert conn.execute("SELECT count(*) FROM tenant.calls").fetchone()[0] == 0


def _plant_function(name: str, tenant_dsn: str) -> None:
    """The tenant's own IMMUTABLE function ``tenant.k()``, which makes the tenant a superuser
    when a superuser runs it (the planner may fold it while planning any read of a table with an
    index or statistics on it). It calls a VOLATILE helper for that: an IMMUTABLE function may
    not run ALTER ROLE itself, and would only fail."""
    with psycopg.connect(tenant_dsn, autocommit=True) as t:
        t.execute(sql.SQL("""CREATE FUNCTION tenant.escalate() RETURNS void VOLATILE LANGUAGE plpgsql AS $$
            BEGIN
                IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
                    EXECUTE 'ALTER ROLE {} SUPERUSER';
                END IF;
            END $$""").format(sql.Identifier(name)))
        t.execute("""CREATE FUNCTION tenant.k() RETURNS int IMMUTABLE LANGUAGE plpgsql AS $$
            BEGIN
                PERFORM tenant.escalate();
                RETURN 1;
            END $$""")


def _plant_index_function(name: str, tenant_dsn: str) -> None:
    """The tenant indexes its table on an expression calling its own function (``_plant_function``)."""
    _plant_function(name, tenant_dsn)
    with psycopg.connect(tenant_dsn, autocommit=True) as t:
        t.execute("CREATE INDEX ON tenant.t ((id + tenant.k()))")


@pytest.mark.parametrize("call", [
    "SELECT * FROM pgdedup.find_duplicates('t')",
    "SELECT * FROM pgdedup.mark_duplicates('t')",
    "SELECT * FROM pgdedup.update_duplicates('t', p_full => true)",
    "SELECT pgdedup.prepare_mark_column('t')",
    "SELECT pgdedup.unmark('t')",
], ids=["find_duplicates", "mark_duplicates", "update_duplicates", "prepare_mark_column", "unmark"])
def test_the_sql_functions_check_the_source_as_the_commands_do(conn, dsn, tenant, call):
    """Revision 24: a superuser calling the functions that read a source from psql is protected
    like pgdedup's commands. The tenant indexes its table (safe then), plants an index whose
    expression calls its own function, and the superuser's call is refused before any read."""
    name, tenant_dsn = tenant
    pgdedup.migrate(dsn)
    pgdedup.index("tenant.t", "id", ["body"], name="t", dsn=dsn, progress=False)
    conn.execute("ALTER TABLE tenant.t ADD COLUMN duplicate_of int")
    assert conn.execute("SELECT pgdedup.prepare_mark_column('t')").fetchone()[0]
    _plant_index_function(name, tenant_dsn)
    with pytest.raises(psycopg.Error, match=f"reading tenant.t runs function tenant.k\\(\\), which {name} made") as info:
        conn.execute(call)
    assert info.value.sqlstate == "PD006"
    assert not _is_superuser(conn, name)


@pytest.mark.parametrize("call", ["SELECT pgdedup.unmark('t')", "SELECT * FROM pgdedup.mark_duplicates('t')",
                                  "SELECT pgdedup.drop_collection('t', true)"],
                         ids=["unmark", "mark_duplicates", "drop_collection"])
def test_a_marking_column_made_again_of_the_owners_type_is_never_read(conn, dsn, tenant, call):
    """The owner drops the marking column and adds it back with a type of its own (with a cast
    to text) holding the same marks: unmarking and marking read it through that cast, so both
    refuse it (before revision 24 neither side checked the marking column)."""
    name, tenant_dsn = tenant
    pgdedup.index("tenant.t", "id", ["body"], name="t", dsn=dsn, progress=False)
    conn.execute("SELECT * FROM pgdedup.mark_duplicates('t')")
    with psycopg.connect(tenant_dsn, autocommit=True) as t:
        t.execute("ALTER TABLE tenant.t DROP COLUMN duplicate_of")
        t.execute("ALTER TABLE tenant.t ADD COLUMN duplicate_of tenant.evil")
    with pytest.raises(psycopg.Error, match=f"column 'duplicate_of' of tenant.t has type tenant.evil, made by {name}") as info:
        conn.execute(call)
    assert info.value.sqlstate == "PD006"
    assert not _is_superuser(conn, name)


def test_a_marking_column_turned_into_the_owners_domain_is_never_written(conn, dsn, tenant):
    """The column keeps its place (pgdedup's own, by its identity), but its type becomes the
    owner's domain over the key type, whose CHECK runs the owner's function on every write."""
    name, tenant_dsn = tenant
    pgdedup.index("tenant.t", "id", ["body"], name="t", dsn=dsn, progress=False)
    conn.execute("SELECT * FROM pgdedup.mark_duplicates('t')")
    with psycopg.connect(tenant_dsn, autocommit=True) as t:
        t.execute(sql.SQL("""CREATE FUNCTION tenant.ok(int) RETURNS boolean LANGUAGE plpgsql AS $$
            BEGIN
                IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
                    EXECUTE 'ALTER ROLE {} SUPERUSER';
                END IF;
                RETURN true;
            END $$""").format(sql.Identifier(name)))
        t.execute("CREATE DOMAIN tenant.mk AS integer CHECK (tenant.ok(VALUE))")
        t.execute("ALTER TABLE tenant.t ALTER COLUMN duplicate_of TYPE tenant.mk")
    for call in ("SELECT pgdedup.unmark('t')", "SELECT * FROM pgdedup.mark_duplicates('t')"):
        with pytest.raises(psycopg.Error, match=f"column 'duplicate_of' of tenant.t has type tenant.mk, made by {name}"):
            conn.execute(call)
    assert not _is_superuser(conn, name)


def test_a_marking_column_re_added_while_unmark_waits_for_the_table_is_checked(conn, dsn, tenant):
    """Which columns to check is read once the table's lock is granted: a column the owner
    re-adds (with a type of their own) in a transaction the lock waits for is seen and refused."""
    name, tenant_dsn = tenant
    pgdedup.index("tenant.t", "id", ["body"], name="t", dsn=dsn, progress=False)
    conn.execute("SELECT * FROM pgdedup.mark_duplicates('t')")
    with psycopg.connect(tenant_dsn, autocommit=True) as t:
        t.execute("ALTER TABLE tenant.t DROP COLUMN duplicate_of")
    with psycopg.connect(tenant_dsn) as t:
        t.execute("ALTER TABLE tenant.t ADD COLUMN duplicate_of tenant.evil")
        run = cli_background("unmark", "t", "--dsn", dsn)
        wait_for(conn, "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = 'pgdedup unmark t' "
                       "AND wait_event_type = 'Lock')", run=run)
        t.commit()
    out, err = run.communicate(timeout=60)
    assert run.returncode == 1 and "tenant.evil" in err and len(err.strip().splitlines()) == 1, err
    assert not _is_superuser(conn, name)


def test_reindex_onto_another_table_checks_the_table_it_leaves_before_reading_it(conn, dsn, tenant):
    """Moving a collection to another table first reads the old one's marking column (marks left
    behind are refused): that read is checked like unmark's, so the old table's index function
    is refused instead of run."""
    name, tenant_dsn = tenant
    pgdedup.index("tenant.t", "id", ["body"], name="t", dsn=dsn, progress=False)
    conn.execute("SELECT * FROM pgdedup.mark_duplicates('t')")
    _plant_index_function(name, tenant_dsn)
    conn.execute("CREATE TABLE public.other (id int PRIMARY KEY, body text)")
    conn.execute("INSERT INTO public.other VALUES (1, 'a text of its own')")
    with pytest.raises(pgdedup.UnsafeOperation, match=f"reading tenant.t runs function tenant.k\\(\\), which {name} made"):
        pgdedup.index("public.other", "id", ["body"], name="t", reindex=True, dsn=dsn, progress=False)
    assert not _is_superuser(conn, name)
    assert conn.execute("SELECT source_table FROM pgdedup.collections WHERE name = 't'").fetchone()[0] == "t"


def test_another_roles_materialized_view_is_refused(conn, dsn, tenant):
    """A materialized view cannot be locked while it is checked and read: its owner could add an
    index calling their function in between. One another non-superuser role owns is refused."""
    name, tenant_dsn = tenant
    with psycopg.connect(tenant_dsn, autocommit=True) as t:
        t.execute("CREATE MATERIALIZED VIEW tenant.mv AS SELECT id, body FROM tenant.t")
    with pytest.raises(pgdedup.UnsafeOperation, match=f"tenant.mv is a materialized view owned by {name}"):
        pgdedup.index("tenant.mv", "id", ["body"], dsn=dsn, progress=False)
    assert not _is_superuser(conn, name)


def test_a_repeatable_read_snapshot_older_than_the_owners_change_is_refused(conn, dsn, tenant):
    """The checks read the catalogs through the transaction's snapshot: in REPEATABLE READ, an
    index the owner made after the snapshot was invisible to them while the planner used it.
    Such a transaction is refused for another role's table; READ COMMITTED sees the index."""
    name, tenant_dsn = tenant
    pgdedup.index("tenant.t", "id", ["body"], name="t", dsn=dsn, progress=False)
    with psycopg.connect(dsn) as su:
        su.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        su.execute("SELECT 1")  # the snapshot
        _plant_index_function(name, tenant_dsn)
        with pytest.raises(psycopg.Error, match="in a REPEATABLE READ transaction: tenant.t belongs to") as info:
            su.execute("SELECT * FROM pgdedup.find_duplicates('t')")
        assert info.value.sqlstate == "PD006"
    with psycopg.connect(dsn) as su:  # READ UNCOMMITTED runs as READ COMMITTED: checked, refused for the index
        su.execute("BEGIN ISOLATION LEVEL READ UNCOMMITTED")
        with pytest.raises(psycopg.Error, match="reading tenant.t runs function tenant.k"):
            su.execute("SELECT * FROM pgdedup.find_duplicates('t')")
    assert not _is_superuser(conn, name)
    one_line_error(cli("dedupe", "t", "--dsn", dsn), "function tenant.k()", f"which {name} made")


def test_a_refused_source_leaves_the_callers_transaction_usable(conn, dsn, tenant):
    """The check is a SQL function now; on a caller's connection it runs in a savepoint, so a
    refusal raises without aborting the application's transaction."""
    name, tenant_dsn = tenant
    pgdedup.index("tenant.t", "id", ["body"], name="t", dsn=dsn, progress=False)
    _plant_index_function(name, tenant_dsn)
    with psycopg.connect(dsn) as app:
        app.execute("CREATE TEMP TABLE app_work (x int)")
        with pytest.raises(pgdedup.UnsafeOperation, match="function tenant.k()"):
            pgdedup.dedupe("t", alter=False, dsn=app)
        app.execute("INSERT INTO app_work VALUES (1)")  # still usable
        assert app.execute("SELECT count(*) FROM app_work").fetchone()[0] == 1
    assert not _is_superuser(conn, name)


def test_every_guarded_sql_function_still_guards(conn, dsn):
    """Revision 24's wrappers carry the check; a later revision that redefined one of them from
    an older file would drop it silently (alembic_ops.function_definitions)."""
    pgdedup.migrate(dsn)
    bodies = dict(conn.execute(
        "SELECT p.proname, p.prosrc FROM pg_proc p WHERE p.pronamespace = 'pgdedup'::regnamespace "
        "AND p.proname IN ('find_duplicates', 'mark_duplicates', 'update_duplicates', 'prepare_mark_column', "
        "'unmark')").fetchall())
    assert len(bodies) == 5
    for name, body in bodies.items():
        assert "pgdedup.guard_" in body and f"pgdedup.{name}_unchecked(" in body, name


def test_an_index_whose_expression_is_the_owners_function_is_refused_unplanned(conn, dsn, tenant):
    """The planner folds an IMMUTABLE function of constants in an index expression (or partial
    index predicate, extended statistics, CHECK constraint) while planning any read of the
    table, with the reader's rights."""
    name, tenant_dsn = tenant
    _plant_index_function(name, tenant_dsn)
    one_line_error(cli("index", "tenant.t", "--key", "id", "--text", "body", "--no-progress", "--dsn", dsn),
                   "function tenant.k()", f"which {name} made")
    assert not _is_superuser(conn, name)


#: A source over the tenant's table, and the tenant's table under it: the table itself, a
#: superuser's view of it, a superuser's partitioned table whose partition the tenant owns.
SOURCES = {
    "table": ("tenant.t", "tenant.t", ()),
    "view": ("public.tv", "tenant.t", ("CREATE VIEW public.tv AS SELECT id, body FROM tenant.t",)),
    "partition": ("public.pt", "tenant.pt1", (
        "CREATE TABLE public.pt (id int PRIMARY KEY, body text) PARTITION BY RANGE (id)",
        "CREATE TABLE tenant.pt1 PARTITION OF public.pt FOR VALUES FROM (0) TO (1000)",
        "INSERT INTO public.pt SELECT id, body FROM tenant.t",
        "ALTER TABLE tenant.pt1 OWNER TO {tenant}")),
}


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("ddl", ["CREATE INDEX ON {t} ((id + tenant.k()))",
                                 "CREATE STATISTICS tenant.s ON (id + tenant.k()), body FROM {t}"],
                         ids=["index", "statistics"])
def test_the_owner_cannot_add_code_to_the_table_while_a_run_reads_it(conn, dsn, tenant, ddl, source):
    """The check is made once per run, under the table's lock, and the run reads the table for
    a long time after (every chunk, every worker's range): the tenant's DDL must wait for the
    run. CREATE INDEX (SHARE) and CREATE STATISTICS (SHARE UPDATE EXCLUSIVE) do not conflict
    with ACCESS SHARE: an index on the tenant's IMMUTABLE function, added mid-run, was folded
    while planning the next read, as the superuser. hold_source (revision 30) holds every table
    of the source's read set that the tenant owns in SHARE UPDATE EXCLUSIVE: the table, the table
    under a superuser's view, the tenant's partition of a superuser's table (revision 28 looked
    at the named relation only, and LOCK TABLE gave those the view's or parent's mode)."""
    name, tenant_dsn = tenant
    relation, tenants_table, setup = SOURCES[source]
    pgdedup.migrate(dsn)
    for statement in setup:
        conn.execute(sql.SQL(statement).format(tenant=sql.Identifier(name)))
    _plant_function(name, tenant_dsn)
    blocker = psycopg.connect(dsn)
    blocker.execute("LOCK TABLE pgdedup.band_keys IN ACCESS EXCLUSIVE MODE")  # holds the run after its check
    try:
        run = cli_background("index", relation, "--key", "id", "--text", "body", "--name", "t", "--no-progress",
                             "--dsn", dsn)
        wait_for(conn, "SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                       "WHERE l.relation = %s::regclass AND l.granted AND l.mode = 'ShareUpdateExclusiveLock' "
                       "AND a.application_name = 'pgdedup index (source lock)')", (tenants_table,), run=run)
        with psycopg.connect(make_conninfo(tenant_dsn, options="-c lock_timeout=300"), autocommit=True) as t:
            with pytest.raises(psycopg.errors.LockNotAvailable):
                t.execute(ddl.format(t=tenants_table))
    finally:
        blocker.rollback()
        blocker.close()
    out, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    assert not _is_superuser(conn, name)


def test_marking_another_roles_table_does_not_hold_it_against_its_applications(conn, dsn, tenant):
    """hold_source is for reading only: a marking transaction that held the tenant's table in
    SHARE UPDATE EXCLUSIVE (revision 28) deadlocked with the tenant's own transaction that had
    updated a row to be marked and then ran ANALYZE (a common load step): PostgreSQL aborts one
    of the two. Marking holds ACCESS SHARE, as before: the tenant's ANALYZE goes through, the
    marking waits for its row, and both finish."""
    name, tenant_dsn = tenant
    with psycopg.connect(tenant_dsn, autocommit=True) as t:
        t.execute("INSERT INTO tenant.t SELECT g, 'some text about item number 1' FROM generate_series(31, 35) g")
    pgdedup.index("tenant.t", "id", ["body"], name="t", dsn=dsn, progress=False)
    pgdedup.dedupe("t", dsn=dsn)
    pgdedup.unmark("t", dsn=dsn)
    app = psycopg.connect(tenant_dsn)
    app.execute("UPDATE tenant.t SET body = body WHERE id = 31")  # a row the marking writes
    try:
        run = subprocess.Popen([sys.executable, "-c", "import sys, psycopg; c = psycopg.connect(sys.argv[1], "
                                "application_name='pgdedup mark t', autocommit=True); "
                                "print(c.execute(\"SELECT * FROM pgdedup.mark_duplicates('t')\").fetchone())", dsn],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(conn, "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = 'pgdedup mark t' "
                       "AND wait_event_type = 'Lock')", run=run)
        app.execute("ANALYZE tenant.t")
        app.commit()
    finally:
        app.close()
    out, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    assert conn.execute("SELECT count(duplicate_of) FROM tenant.t").fetchone()[0] == 5


def test_a_role_that_may_only_read_another_roles_table_is_refused_unread(conn, dsn, tenant, make_role):
    """Holding a table against its owner's DDL takes UPDATE, DELETE or TRUNCATE on it
    (PostgreSQL's rule for LOCK TABLE). A role granted only SELECT on the tenant's table cannot,
    and is refused before any read (PD006, naming the grant); granted UPDATE, it indexes."""
    tenant_name, tenant_dsn = tenant
    pgdedup.migrate(dsn)
    reader, reader_dsn = make_role("reader")
    for grant in APP_GRANTS[:3]:
        conn.execute(sql.SQL(grant).format(sql.Identifier(reader)))
    conn.execute(sql.SQL("GRANT USAGE ON SCHEMA tenant TO {}").format(sql.Identifier(reader)))
    with psycopg.connect(tenant_dsn, autocommit=True) as t:
        t.execute(sql.SQL("GRANT SELECT ON tenant.t TO {}").format(sql.Identifier(reader)))
    args = ("index", "tenant.t", "--key", "id", "--text", "body", "--name", "t", "--no-progress", "--dsn", reader_dsn)
    one_line_error(cli(*args), f"tenant.t is owned by {tenant_name}", f"GRANT UPDATE ON tenant.t TO {reader}")
    assert conn.execute("SELECT count(*) FROM pgdedup.signatures").fetchone()[0] == 0
    with psycopg.connect(tenant_dsn, autocommit=True) as t:
        t.execute(sql.SQL("GRANT UPDATE ON tenant.t TO {}").format(sql.Identifier(reader)))
    proc = cli(*args)
    assert proc.returncode == 0, proc.stderr
    assert conn.execute("SELECT count(*) FROM pgdedup.signatures").fetchone()[0] == 30


def test_a_pgdedup_schema_made_by_another_role_is_never_used_by_a_superuser(conn, dsn, make_role):
    """A role that may create schemas (the database's owner, often an application's role) makes
    the schema ``pgdedup`` before the superuser first migrates: the superuser's migrate would
    fill a schema whose owner may replace every function in it. Refused with nothing created;
    and a planted ``pgdedup_version`` at head with the role's own ``guard_source`` is refused
    before any pgdedup function runs (it would have run as the superuser)."""
    squatter, squatter_dsn = make_role("squatter")
    conn.execute(sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(sql.Identifier(conn.info.dbname),
                                                                        sql.Identifier(squatter)))
    with psycopg.connect(squatter_dsn, autocommit=True) as s:
        s.execute("CREATE SCHEMA pgdedup")
    one_line_error(cli("migrate", "--dsn", dsn), "the schema pgdedup is owned by " + squatter)
    assert conn.execute("SELECT count(*) FROM pg_class WHERE relnamespace = 'pgdedup'::regnamespace").fetchone()[0] == 0
    with psycopg.connect(squatter_dsn, autocommit=True) as s:
        s.execute("CREATE TABLE pgdedup.pgdedup_version (version_num text)")
        s.execute("INSERT INTO pgdedup.pgdedup_version VALUES (%s)", (HEAD,))
        s.execute(sql.SQL("""CREATE FUNCTION pgdedup.guard_source(text, text, text, text, text[], text) RETURNS "char"
            LANGUAGE plpgsql AS $$ BEGIN
                IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN
                    EXECUTE 'ALTER ROLE {} SUPERUSER';
                END IF;
                RETURN 'r';
            END $$""").format(sql.Identifier(squatter)))
    _docs(conn, "docs", seed=5)
    one_line_error(cli("index", "docs", "--key", "id", "--text", "body", "--no-progress", "--dsn", dsn),
                   "is owned by " + squatter)
    assert not _is_superuser(conn, squatter)
    conn.execute("DROP SCHEMA pgdedup CASCADE")


def test_a_superuser_runs_no_function_another_role_put_in_pgdedups_schema(conn, dsn, make_role):
    """The schema is the superuser's, but a role was given CREATE on it: its function in there
    (an overload pgdedup's calls could resolve to) makes every command refuse, migrate too."""
    pgdedup.migrate(dsn)
    planter, planter_dsn = make_role("planter")
    conn.execute(sql.SQL("GRANT USAGE, CREATE ON SCHEMA pgdedup TO {}").format(sql.Identifier(planter)))
    # the grant alone: the role could add such a function while a command runs, after its check
    one_line_error(cli("status", "--dsn", dsn), f"{planter} may create objects in schema pgdedup",
                   f"REVOKE CREATE ON SCHEMA pgdedup FROM {planter}")
    with psycopg.connect(planter_dsn, autocommit=True) as p:
        p.execute("CREATE FUNCTION pgdedup.similarity(text, text) RETURNS float8 LANGUAGE sql AS 'SELECT 1.0'")
    for args in (("migrate",), ("status",)):
        one_line_error(cli(*args, "--dsn", dsn), "the function pgdedup.similarity(text,text)", f"owned by {planter}")


def test_an_index_the_owner_commits_while_the_run_waits_for_the_table_is_checked(conn, dsn, tenant):
    """The tenant's CREATE INDEX, not committed when the run starts, holds SHARE: the run's hold
    (SHARE UPDATE EXCLUSIVE) waits for it, and only then is the table checked, so the index is
    seen and the run refused before any read. Checked first and held after, the check missed it
    and the run read the table with it in place."""
    name, tenant_dsn = tenant
    pgdedup.migrate(dsn)
    _plant_function(name, tenant_dsn)
    with psycopg.connect(tenant_dsn) as t:
        t.execute("CREATE INDEX ON tenant.t ((id + tenant.k()))")  # not committed yet
        run = cli_background("index", "tenant.t", "--key", "id", "--text", "body", "--name", "t", "--no-progress",
                             "--dsn", dsn)
        wait_for(conn, "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = "
                       "'pgdedup index (source lock)' AND wait_event_type = 'Lock')", run=run)
        t.commit()
    out, err = run.communicate(timeout=60)
    assert run.returncode == 1 and "function tenant.k()" in err and len(err.strip().splitlines()) == 1, err
    assert conn.execute("SELECT count(*) FROM pgdedup.signatures").fetchone()[0] == 0


def test_members_of_the_schemas_owner_are_trusted_as_it(conn, dsn, make_role):
    """A role that owns pgdedup's schema (it ran migrate) and has members: their CREATE is the
    owner's, inherited, not a grant of their own, and no reason to refuse the owner's runs."""
    owner, owner_dsn = make_role("owner")
    member, _ = make_role("member")
    conn.execute(sql.SQL("GRANT CREATE ON DATABASE {} TO {}").format(sql.Identifier(conn.info.dbname),
                                                                        sql.Identifier(owner)))
    conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(owner), sql.Identifier(member)))
    with psycopg.connect(owner_dsn, autocommit=True) as o:
        o.execute("CREATE SCHEMA app")
        o.execute("CREATE TABLE app.own (id int PRIMARY KEY, body text)")
        o.execute("INSERT INTO app.own SELECT g, 'words about the item number ' || g FROM generate_series(1, 20) g")
    assert cli("migrate", "--dsn", owner_dsn).returncode == 0
    proc = cli("index", "app.own", "--key", "id", "--text", "body", "--no-progress", "--dsn", owner_dsn)
    assert proc.returncode == 0, proc.stderr
    conn.execute("DROP SCHEMA pgdedup CASCADE")
    conn.execute("DROP SCHEMA app CASCADE")
