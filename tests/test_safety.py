"""Safe on production tables: pgdedup never writes a column it does not own, takes its lock before
its first write, checks every parameter before writing anything, and leaves no process behind.

Concurrency and crash tests use real processes (the CLI in a child process), real signals
(SIGKILL) and real lock waits on the server, never exceptions raised in-process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

import pgdedup
from pgdedup import sample

from clirun import cli, cli_background, one_line_error
from crashes import wait_for
from planted import create, make_rows


def _waiting(app_prefix: str) -> str:
    return ("SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name LIKE '"
            + app_prefix + "%%' AND wait_event_type = 'Lock')")


@pytest.fixture
def items(conn, dsn):
    rows, groups, originals = make_rows("bigint", groups=8, copies=3, unrelated=30)
    create(conn, "items", "bigint", rows)
    pgdedup.index("items", "id", ["title", "body"], dsn=dsn, progress=False)
    return rows


def _columns(conn, table: str) -> list[str]:
    return [r[0] for r in conn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped "
        "ORDER BY attnum", (table,))]


# 1. the marking column -------------------------------------------------------------------------

def test_marking_the_key_is_refused_and_keys_survive(conn, dsn, items):
    before = conn.execute("SELECT array_agg(id ORDER BY id) FROM items").fetchone()[0]
    one_line_error(cli("dedupe", "items", "--column", "id", "--dsn", dsn), 'refusing to mark column "id"', "key")
    with pytest.raises(psycopg.Error) as info:
        conn.execute("SELECT * FROM pgdedup.mark_duplicates('items', p_column => 'id')")
    assert info.value.sqlstate == "PD006"
    assert conn.execute("SELECT array_agg(id ORDER BY id) FROM items").fetchone()[0] == before


def test_marking_a_text_column_is_refused(conn, dsn):
    conn.execute("CREATE TABLE notes (k text PRIMARY KEY, body text, extra text)")
    conn.execute("INSERT INTO notes SELECT 'k' || g, 'one two three four five six seven eight', 'keep me' "
                 "FROM generate_series(1, 20) g")
    pgdedup.index("notes", "k", ["body"], dsn=dsn, progress=False)
    with pytest.raises(pgdedup.UnsafeOperation, match='refusing to mark column "body": it is the text'):
        pgdedup.dedupe("notes", column="body", dsn=dsn)
    # a text column that is not indexed, but holds values pgdedup did not write
    with pytest.raises(pgdedup.UnsafeOperation, match="holds values pgdedup did not write"):
        pgdedup.dedupe("notes", column="extra", dsn=dsn)
    assert conn.execute("SELECT count(*) FROM notes WHERE body LIKE 'one two%' AND extra = 'keep me'"
                        ).fetchone()[0] == 20
    assert pgdedup.dedupe("notes", dsn=dsn).duplicates == 19  # its own column works


def test_a_declared_empty_column_is_adopted_and_recorded(conn, dsn, items):
    conn.execute("ALTER TABLE items ADD COLUMN dup_of bigint")
    result = pgdedup.dedupe("items", column="dup_of", dsn=dsn)
    assert result.marked_in == "public.items.dup_of" and result.duplicates == 8 * 3  # 8 groups of 1 + 3
    assert conn.execute("SELECT mark_column FROM pgdedup.collections WHERE name = 'items'").fetchone()[0] == "dup_of"
    # the recorded column is marked again; any other column is refused, and nothing is added
    assert pgdedup.dedupe("items", column="dup_of", dsn=dsn).duplicates == result.duplicates
    with pytest.raises(pgdedup.UnsafeOperation, match='marks column "dup_of"'):
        pgdedup.dedupe("items", dsn=dsn)
    assert "duplicate_of" not in _columns(conn, "items")


# 2 and 11. every writer takes the collection's lock first -------------------------------------

def _marks(conn, table: str = "items") -> dict:
    return dict(conn.execute(f"SELECT id, duplicate_of FROM {table}").fetchall())


def _made_again(conn, table: str = "items") -> None:
    """``table`` dropped and created again under its name with the same rows and columns (what a
    migration that rebuilds a table, or a dump and restore, leaves): a new oid, new columns."""
    conn.execute(f"ALTER TABLE {table} RENAME TO {table}_old")
    conn.execute(f"CREATE TABLE {table} (LIKE {table}_old INCLUDING ALL)")
    conn.execute(f"INSERT INTO {table} SELECT * FROM {table}_old")
    conn.execute(f"DROP TABLE {table}_old")


def test_a_table_made_again_with_an_apps_own_marking_column_is_refused(conn, dsn, items):
    pgdedup.dedupe("items", keep_order="published_at, id", dsn=dsn)
    _made_again(conn)
    conn.execute("UPDATE items SET duplicate_of = id + 7")  # the app's own values under that name
    values = _marks(conn)
    pgdedup.index("items", dsn=dsn, progress=False)
    for verify in ("estimate", "auto", "exact"):
        with pytest.raises(pgdedup.UnsafeOperation, match="holds values pgdedup did not write.*made again"):
            pgdedup.dedupe("items", keep_order="published_at, id", verify=verify, dsn=dsn)
    for clear in (lambda: pgdedup.unmark("items", dsn=dsn), lambda: pgdedup.drop("items", unmark=True, dsn=dsn)):
        with pytest.raises(pgdedup.UnsafeOperation, match="not the column pgdedup marked"):
            clear()
    assert _marks(conn) == values


@pytest.mark.parametrize("drift", [False, True], ids=["as dumped", "a marked row deleted before the dump"])
def test_a_restored_table_holding_pgdedups_own_marks_is_marked_on(conn, dsn, items, drift):
    pgdedup.dedupe("items", keep_order="published_at, id", dsn=dsn)
    if drift:
        conn.execute("DELETE FROM items WHERE id = (SELECT min(id) FROM items WHERE duplicate_of IS NOT NULL)")
    marks = _marks(conn)
    assert sum(v is not None for v in marks.values()) > 10
    _made_again(conn)
    pgdedup.index("items", dsn=dsn, progress=False)
    assert pgdedup.dedupe("items", keep_order="published_at, id", dsn=dsn).kind == "incremental"
    assert _marks(conn) == marks


def test_a_dropped_marking_column_comes_back_with_every_mark(conn, dsn, items):
    """Dropped (as alembic autogenerate proposes when the app's model lacks it), the column is
    added back empty by the next dedupe, which must then write every mark, not only the changes."""
    pgdedup.dedupe("items", keep_order="published_at, id", dsn=dsn)
    marks = _marks(conn)
    conn.execute("ALTER TABLE items DROP COLUMN duplicate_of")
    again = pgdedup.dedupe("items", keep_order="published_at, id", dsn=dsn)
    assert again.kind == "full" and _marks(conn) == marks
    assert pgdedup.status("items", dsn=dsn)[0]["marked"] == sum(v is not None for v in marks.values())


def test_reindex_onto_another_table_never_overwrites_its_column(conn, dsn, items):
    pgdedup.dedupe("items", keep_order="published_at, id", dsn=dsn)
    conn.execute("CREATE TABLE other (LIKE items INCLUDING ALL)")
    conn.execute("INSERT INTO other SELECT * FROM items")
    conn.execute("UPDATE other SET duplicate_of = id + 42")
    values = _marks(conn, "other")
    marks = _marks(conn)
    with pytest.raises(pgdedup.UnsafeOperation, match=r"has marks in public.items.duplicate_of: clear them first"):
        pgdedup.index("other", "id", ["title", "body"], name="items", reindex=True, dsn=dsn, progress=False)
    assert _marks(conn) == marks  # nothing changed
    pgdedup.unmark("items", dsn=dsn)
    pgdedup.index("other", "id", ["title", "body"], name="items", reindex=True, dsn=dsn, progress=False)
    with pytest.raises(pgdedup.UnsafeOperation, match="holds values pgdedup did not write"):
        pgdedup.dedupe("items", keep_order="published_at, id", dsn=dsn)
    assert _marks(conn, "other") == values
    pgdedup.dedupe("items", keep_order="published_at, id", column="dup_of", dsn=dsn)  # a column of its own
    assert dict(conn.execute("SELECT id, dup_of FROM other").fetchall()) == marks


def test_reindex_of_the_same_table_renamed_keeps_marking_it(conn, dsn, items):
    pgdedup.dedupe("items", keep_order="published_at, id", dsn=dsn)
    marks = _marks(conn)
    conn.execute("ALTER TABLE items RENAME TO posts")
    pgdedup.index("posts", "id", ["title", "body"], name="items", reindex=True, dsn=dsn, progress=False)
    assert pgdedup.dedupe("items", keep_order="published_at, id", dsn=dsn).kind == "full"
    assert _marks(conn, "posts") == marks
    assert pgdedup.unmark("items", dsn=dsn) == sum(v is not None for v in marks.values())


def test_the_keep_order_may_not_name_the_marking_column(conn, dsn, items):
    """Its values change with each dedupe: the marks would depend on the previous run's."""
    pgdedup.dedupe("items", keep_order="published_at, id", dsn=dsn)
    one_line_error(cli("dedupe", "items", "--keep-order", "duplicate_of, id", "--dsn", dsn),
                   'keep order column "duplicate_of" is the column pgdedup marks')
    conn.execute('ALTER TABLE items ADD COLUMN "pub,lished" timestamptz')
    conn.execute('UPDATE items SET "pub,lished" = published_at')
    proc = cli("dedupe", "items", "--keep-order", '"pub,lished" desc, id', "--full", "--dsn", dsn)
    assert proc.returncode == 0, proc.stderr
    for bad, message in (("published_at,", "has an empty item"), (", id", "has an empty item"),
                         ("published_at,,id", "has an empty item"), ('"pub,lished', "cannot read keep order item")):
        one_line_error(cli("dedupe", "items", "--keep-order", bad, "--dsn", dsn), message)


@pytest.mark.parametrize("kind", ["json", "point", "xml"])
def test_a_keep_order_that_cannot_be_sorted_is_refused_before_any_write(conn, dsn, items, kind):
    """Such a column passed the keep order's check; dedupe then added and committed the marking
    column, and failed in the decision's ORDER BY with PostgreSQL's own message."""
    conn.execute(f"ALTER TABLE items ADD COLUMN meta {kind}")
    conn.commit()
    one_line_error(cli("dedupe", "items", "--keep-order", "meta, id", "--dsn", dsn),
                   f'keep order column "meta" is of type {kind}, which cannot be sorted')
    assert "duplicate_of" not in _columns(conn, "items")
    assert pgdedup.status("items", dsn=dsn)[0]["mark_column"] is None
    with pytest.raises(psycopg.Error, match="cannot be sorted"):
        conn.execute("SELECT pgdedup.mark_duplicates('items', p_keep_order => 'meta')")
    conn.rollback()


WRITERS = {
    "reindex": ("index", "items", "--key", "id", "--text", "title", "--text", "body", "--reindex",
                "--no-progress"),
    "reindex-ngram3": ("index", "items", "--key", "id", "--text", "title", "--text", "body", "--reindex",
                       "--ngram", "3", "--no-progress"),
    "dedupe": ("dedupe", "items"),
    "dedupe-exact": ("dedupe", "items", "--verify", "exact"),
    "pairs-exact": ("pairs", "items", "--verify", "exact"),
}


def _signatures(conn, name: str) -> dict[str, tuple]:
    return {r[0]: (r[1], r[2]) for r in conn.execute(
        "SELECT s.row_key, s.signature, s.buckets FROM pgdedup.signatures s "
        "JOIN pgdedup.collections c USING (collection_id) WHERE c.name = %s", (name,))}


@pytest.mark.parametrize("first", ["reindex", "dedupe-exact"])
@pytest.mark.parametrize("second", ["reindex-ngram3", "dedupe", "dedupe-exact", "pairs-exact"])
def test_a_second_writer_fails_at_once_naming_the_first_and_writes_nothing(conn, dsn, items, first, second):
    """The first run is held mid-way by a real lock on pgdedup.runs (both index and dedupe insert
    their run there after their work): the second must fail at once, name the first, and change
    nothing; the first then finishes with the results a lone run gives."""
    reference = _signatures(conn, "items")
    blocker = psycopg.connect(dsn)
    blocker.execute("LOCK TABLE pgdedup.runs IN ACCESS EXCLUSIVE MODE")
    try:
        held = cli_background(*WRITERS[first], "--dsn", dsn)
        wait_for(conn, _waiting("pgdedup "))
        proc = cli(*WRITERS[second], "--dsn", dsn, timeout=30)
        kind = "index" if first.startswith("reindex") else "dedupe"
        one_line_error(proc, 'collection "items" is busy: pgdedup', f"pgdedup {kind} items (pid")
        assert proc.stdout == ""
        assert conn.execute("SELECT ngram FROM pgdedup.collections").fetchone()[0] == 5
    finally:
        blocker.commit()
        blocker.close()
    out, err = held.communicate(timeout=60)
    assert held.returncode == 0, err
    assert _signatures(conn, "items") == reference  # a full re-sign of the same rows: identical
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys").fetchone()[0] == 16 * sum(
        len(sig) > 0 for sig, _ in reference.values())  # 16 bands of every non-empty row, no orphans
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys_staged").fetchone()[0] == 0


def test_index_refuses_while_a_psql_session_dedupes(conn, dsn, items):
    other = psycopg.connect(dsn)
    other.execute("SELECT * FROM pgdedup.find_duplicates('items')")  # open transaction holds the lock
    try:
        one_line_error(cli("index", "items", "--key", "id", "--text", "title", "--text", "body", "--reindex",
                            "--dsn", dsn), 'collection "items" is busy')
    finally:
        other.rollback()
        other.close()


def test_a_worker_writes_only_while_its_run_holds_the_lock(conn, items):
    cid = conn.execute("SELECT collection_id FROM pgdedup.collections").fetchone()[0]
    with pytest.raises(psycopg.Error, match="no longer holds the collection's lock") as info:
        conn.execute("SELECT pgdedup.assert_locked_by(%s, pg_backend_pid())", (cid,))
    assert info.value.sqlstate == "PD005"
    conn.execute("SELECT pgdedup.lock_collection(%s, true)", (cid,))
    conn.execute("SELECT pgdedup.assert_locked_by(%s, pg_backend_pid())", (cid,))
    conn.execute("SELECT pg_advisory_unlock(1885824100, %s)", (cid,))


# 3. unique keys, checked before anything is signed ---------------------------------------------

def test_duplicate_keys_in_different_chunks_are_refused_on_every_run(conn, dsn):
    conn.execute("CREATE TABLE t (id int, body text)")  # no unique constraint: the check counts
    conn.execute("INSERT INTO t SELECT g, 'text number ' || g FROM generate_series(1, 500) g")
    conn.execute("INSERT INTO t VALUES (7, 'another row with key seven')")  # far from the first 7
    for _ in range(2):
        with pytest.raises(pgdedup.UnsafeOperation, match="key column 'id' of public.t is not unique: '7' occurs 2"):
            pgdedup.index("t", "id", ["body"], dsn=dsn, chunk_size=50, progress=False)
        assert conn.execute("SELECT count(*) FROM pgdedup.collections").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM pgdedup.signatures").fetchone()[0] == 0


# 4. workers die with their parent --------------------------------------------------------------

def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(c) for c in (task / "children").read_text().split()}
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


@contextmanager
def holding_workers(conn, dsn, start: Callable[[], subprocess.Popen]
                    ) -> Iterator[tuple[subprocess.Popen, set[int], Callable[[], None]]]:
    """An index of ``docs`` (4,000 rows) by two workers, which ``start`` begins in a process
    group of its own, held by a real table lock inside its workers' first COPY; yields
    (process, worker pids, release), and kills the group if it still runs at the end."""
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text)")
    conn.execute("INSERT INTO docs SELECT g, repeat('word' || (g % 97) || ' other' || g || ' ', 30) "
                 "FROM generate_series(1, 4000) g")
    pgdedup.migrate(dsn)
    blocker = psycopg.connect(dsn)  # lets the run read, but holds its workers' first COPY
    blocker.execute("LOCK TABLE pgdedup.signatures IN EXCLUSIVE MODE")
    run = start()
    try:
        wait_for(conn, "SELECT count(*) = 2 FROM pg_stat_activity WHERE application_name = "
                        "'pgdedup index docs (worker)' AND wait_event_type = 'Lock'")
        workers = _children(run.pid)
        assert len(workers) >= 2
        yield run, workers, blocker.commit
    finally:
        blocker.commit()
        blocker.close()
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
        run.communicate()


@pytest.fixture
def held_index(conn, dsn):
    """`pgdedup index docs --workers 2` (4,000 rows), held (``holding_workers``)."""
    with holding_workers(conn, dsn, lambda: cli_background(
            "index", "docs", "--key", "id", "--text", "body", "--workers", "2", "--chunk-size", "100",
            "--no-progress", "--dsn", dsn)) as held:
        yield held


def _gone(conn, run, workers) -> None:
    """The run, its worker processes and their database sessions are all gone within seconds."""
    run.wait(timeout=10)
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in workers)
    wait_for(conn, "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name LIKE "
                    "'pgdedup index docs%%')", timeout=10)


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_kill_9_of_index_takes_its_workers_down_and_a_rerun_finishes(conn, dsn, held_index):
    run, workers, release = held_index
    os.kill(run.pid, signal.SIGKILL)  # the parent only: its workers must follow by themselves
    _gone(conn, run, workers)
    release()
    assert conn.execute("SELECT count(*) FROM pgdedup.signatures").fetchone()[0] == 0  # nothing half-written
    started = time.monotonic()
    result = pgdedup.index("docs", "id", ["body"], dsn=dsn, workers=2, progress=False)
    assert result.signed == 4000 and time.monotonic() - started < 60
    pgdedup.index("docs", "id", ["body"], name="reference", dsn=dsn, progress=False)
    assert _signatures(conn, "docs") == _signatures(conn, "reference")


#: A first load that stages its band keys (forced for these few rows) with two workers, in a child.
STAGED_LOAD = ("import sys; from pgdedup import loader; loader.DIRECT_SHARE_OF_BUFFERS = 0.0; import pgdedup; "
               "pgdedup.index('docs', 'id', ['body'], dsn=sys.argv[1], workers=2, chunk_size=100, progress=False)")


@pytest.mark.parametrize("move", ["inserts", "rebuild"])
def test_kill_9_while_staged_keys_move_loses_and_doubles_no_key(conn, dsn, move):
    """SIGKILL while a staged first load moves its keys into band_keys (a slow trigger holds the
    move mid-insert): by the two sessions' sorted inserts of their shares of the bands (another
    collection has keys already), or by the rebuild of an empty band_keys (revision 41: its
    primary key dropped, to be added again). The move never commits, its sessions end once they
    find the client gone, the primary key is as it was, and the rerun moves every staged key
    exactly once."""
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text)")
    conn.execute("INSERT INTO docs SELECT g, repeat('word' || (g % 97) || ' other' || g || ' ', 30) "
                 "FROM generate_series(1, 600) g")
    pgdedup.migrate(dsn)
    before = 0
    if move == "inserts":
        conn.execute("CREATE TABLE other AS SELECT * FROM docs WHERE id <= 50")
        conn.execute("ALTER TABLE other ADD PRIMARY KEY (id)")
        pgdedup.index("other", "id", ["body"], dsn=dsn, progress=False)
        before = 50 * 16
    conn.execute("CREATE FUNCTION public.slow_move() RETURNS trigger LANGUAGE plpgsql AS $$ "
                 "BEGIN PERFORM pg_sleep(0.001); RETURN NEW; END $$")
    conn.execute("CREATE TRIGGER slow BEFORE INSERT ON pgdedup.band_keys FOR EACH ROW EXECUTE FUNCTION public.slow_move()")
    run = subprocess.Popen([sys.executable, "-c", STAGED_LOAD, dsn], start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    moving = ("SELECT count(*) = 2 FROM pg_stat_activity WHERE state = 'active' "
              "AND application_name = 'pgdedup index (moving band keys)'" if move == "inserts" else
              "SELECT count(*) = 1 FROM pg_stat_activity WHERE state = 'active' "
              "AND query LIKE '%%rebuild_band_keys%%' AND application_name LIKE 'pgdedup index docs%%' "
              "AND wait_event = 'PgSleep'")  # in the trigger: the key is dropped, keys are going in
    try:
        wait_for(conn, moving)
    finally:
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
    wait_for(conn, "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name LIKE 'pgdedup index%%')",
              timeout=60)
    conn.execute("DROP TRIGGER slow ON pgdedup.band_keys")
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys").fetchone()[0] == before
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys_staged").fetchone()[0] == 600 * 16
    assert conn.execute("SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = "
                        "'pgdedup.band_keys'::regclass").fetchall() == [
        ("band_keys_pkey", "PRIMARY KEY (collection_id, band, bucket, row_id)")]
    assert pgdedup.index("docs", dsn=dsn, progress=False).signed == 0
    keys = "SELECT band, bucket, row_id FROM pgdedup.band_keys ORDER BY 1, 2, 3"
    stored = ("SELECT (u.band - 1)::smallint, u.bucket, s.row_id FROM pgdedup.signatures s, "
              "unnest(s.buckets) WITH ORDINALITY AS u(bucket, band) ORDER BY 1, 2, 3")
    assert conn.execute(keys).fetchall() == conn.execute(stored).fetchall()
    assert conn.execute("SELECT count(*) FROM pgdedup.band_keys_staged").fetchone()[0] == 0


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_ctrl_c_stops_index_and_its_workers_without_a_traceback(conn, dsn, held_index):
    run, workers, _ = held_index
    os.killpg(run.pid, signal.SIGINT)  # what a terminal sends: the whole process group
    _gone(conn, run, workers)
    assert run.returncode == 130
    assert run.stderr.read().strip() == "pgdedup: interrupted"


# 5. plans that do not depend on fresh statistics ------------------------------------------------

def _table_of_random_words(conn, table: str, rows: int, seed: int) -> None:
    conn.execute(f"CREATE TABLE {table} (id bigint PRIMARY KEY, body text)")
    conn.execute(f"INSERT INTO {table} SELECT g, (SELECT string_agg(md5(({seed} * 1000000 + g * 100 + i)::text), ' ') "
                 f"FROM generate_series(1, 40) i) FROM generate_series(1, {rows}) g")


def test_a_resume_after_kill_9_is_not_quadratic_when_statistics_lag(conn, dsn):
    """Statistics that know only another collection (then a crash) once made the resume compare
    every source row with every stored row: ~10× a full index here, minutes at 100k rows."""
    rows = 12_000
    _table_of_random_words(conn, "a", rows, 1)
    _table_of_random_words(conn, "b", rows, 2)
    started = time.monotonic()
    pgdedup.index("a", "id", ["body"], dsn=dsn, progress=False)
    full = time.monotonic() - started
    conn.execute("ANALYZE")  # the statistics now describe collection a only
    run = cli_background("index", "b", "--key", "id", "--text", "body", "--workers", "1", "--chunk-size", "500",
                         "--no-progress", "--dsn", dsn)
    wait_for(conn, "SELECT count(*) >= %s FROM pgdedup.signatures WHERE collection_id = "
                    "(SELECT collection_id FROM pgdedup.collections WHERE name = 'b')", (rows * 2 // 3,))
    os.killpg(run.pid, signal.SIGKILL)
    run.communicate()
    wait_for(conn, "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name LIKE 'pgdedup index b%%')")
    started = time.monotonic()
    result = pgdedup.index("b", "id", ["body"], dsn=dsn, progress=False)
    resume = time.monotonic() - started
    assert 0 < result.signed < rows // 3 + 500
    assert resume < full + 2, (resume, full)
    conn.execute("UPDATE b SET body = body || ' changed' WHERE id % 100 = 0")
    started = time.monotonic()
    assert pgdedup.index("b", "id", ["body"], dsn=dsn, progress=False).signed == rows // 100
    assert time.monotonic() - started < full / 2 + 1


# 6. every parameter is checked before anything is written ------------------------------------

@pytest.mark.parametrize("args,message", [
    (("--threshold", "1.5"), "threshold must be in (0, 1], not 1.5"),
    (("--threshold", "nan"), "threshold must be in (0, 1], not NaN"),
    (("--threshold", "-1"), "threshold must be in (0, 1], not -1"),
    (("--threshold", "0"), "threshold must be in (0, 1], not 0"),
    (("--max-bucket", "0"), "max_bucket must be a positive integer, not 0"),
    (("--max-bucket", "-5"), "max_bucket must be a positive integer, not -5"),
    (("--column", "m" * 70), "the marking column's name is longer than 63 bytes"),  # ALTER would cut it short
])
def test_dedupe_refuses_bad_parameters_before_writing(conn, dsn, items, args, message):
    columns = _columns(conn, "items")
    one_line_error(cli("dedupe", "items", *args, "--dsn", dsn), message)
    assert _columns(conn, "items") == columns
    assert conn.execute("SELECT count(*) FROM pgdedup.runs WHERE kind = 'dedupe'").fetchone()[0] == 0
    assert conn.execute("SELECT mark_column FROM pgdedup.collections").fetchone()[0] is None


def test_sql_functions_and_api_refuse_bad_parameters(conn, dsn, items):
    bad = [("SELECT * FROM pgdedup.mark_duplicates('items', 1.5)", "threshold"),
           ("SELECT * FROM pgdedup.mark_duplicates('items', 'NaN')", "threshold"),
           ("SELECT * FROM pgdedup.find_duplicates('items', 0)", "threshold"),
           ("SELECT * FROM pgdedup.find_duplicates('items', NULL, NULL, 0)", "max_bucket"),
           ("SELECT * FROM pgdedup.pairs('items', -1)", "threshold"),
           ("SELECT * FROM pgdedup.pairs('items', NULL, 'guess')", "verify"),
           ("SELECT * FROM pgdedup.similar('items', '1', 2)", "threshold"),
           ("SELECT * FROM pgdedup.similar('items', '1', NULL, -1)", "limit")]
    for query, what in bad:
        with pytest.raises(psycopg.Error, match=what) as info:
            conn.execute(query)
        assert info.value.sqlstate == "PD003", query
    with pytest.raises(pgdedup.InvalidArgument, match="threshold"):
        list(pgdedup.pairs("items", threshold=float("inf"), dsn=dsn))
    with pytest.raises(pgdedup.InvalidArgument, match="limit"):
        pgdedup.similar("items", text="any words at all here", limit=0, dsn=dsn)
    assert "duplicate_of" not in _columns(conn, "items")
    assert conn.execute("SELECT count(*) FROM pgdedup.duplicates").fetchone()[0] == 0


@pytest.mark.parametrize("kwargs,error", [
    ({"chunk_size": 0}, "chunk_size must be a positive integer"),
    ({"workers": 0}, "workers must be a positive integer"),
    ({"key": "nosuch"}, "column 'nosuch' does not exist"),
])
def test_a_refused_first_index_leaves_no_collection(conn, dsn, kwargs, error):
    conn.execute("CREATE TABLE t (id int PRIMARY KEY, body text)")
    conn.execute("INSERT INTO t VALUES (1, 'some words here')")
    args = {"key": "id", **kwargs}
    with pytest.raises(pgdedup.PgdedupError, match=error):
        pgdedup.index("t", args.pop("key"), ["body"], dsn=dsn, progress=False, **args)
    if conn.execute("SELECT to_regclass('pgdedup.collections') IS NOT NULL").fetchone()[0]:
        assert conn.execute("SELECT count(*) FROM pgdedup.collections").fetchone()[0] == 0


# 10. the first in-place dedupe does not hold the table ---------------------------------------

def test_adding_the_column_waits_at_most_the_lock_timeout(conn, dsn, items):
    reader = psycopg.connect(dsn)
    reader.execute("SELECT count(*) FROM items")  # an open transaction: ACCESS SHARE on items
    try:
        started = time.monotonic()
        with pytest.raises(pgdedup.CollectionBusy, match="could not lock public.items to add column"):
            pgdedup.dedupe("items", dsn=make_conninfo(dsn, options="-c lock_timeout=300"))
        assert time.monotonic() - started < 5
    finally:
        reader.rollback()
        reader.close()
    assert "duplicate_of" not in _columns(conn, "items")


@pytest.mark.parametrize("callers", ["0", "200ms", "10s"])
def test_sql_that_alters_the_table_gives_the_caller_its_lock_timeout_back(conn, dsn, items, callers):
    """Adding the marking column (mark_duplicates → prepare_mark_column) and the tracking triggers
    (track) wait at most 5 s for the table when the session sets no lock_timeout; the rest of
    the caller's transaction runs with the caller's value again. Before revision 52 it ran with
    5 s: a psql session's marking, and its own statements after it, failed on a row another
    transaction held longer, where they would have waited."""
    with psycopg.connect(make_conninfo(dsn, options=f"-c lock_timeout={callers}")) as psql:  # one transaction
        assert psql.execute("SELECT count(*) FROM pgdedup.mark_duplicates('items')").fetchone()[0] == 1
        assert "duplicate_of" in _columns(psql, "items")
        assert psql.execute("SHOW lock_timeout").fetchone()[0] == callers
        assert psql.execute("SELECT pgdedup.track('items')").fetchone()[0] is True
        assert psql.execute("SHOW lock_timeout").fetchone()[0] == callers
    assert conn.execute("SELECT count(duplicate_of) FROM items").fetchone()[0] == 8 * 3
    assert pgdedup.status("items", dsn=dsn)[0]["tracked"] is True


def test_readers_are_not_blocked_while_a_first_dedupe_runs(conn, dsn, items):
    blocker = psycopg.connect(dsn)
    blocker.execute("LOCK TABLE pgdedup.runs IN ACCESS EXCLUSIVE MODE")  # holds dedupe mid-way
    try:
        run = cli_background("dedupe", "items", "--dsn", dsn)
        wait_for(conn, _waiting("pgdedup dedupe items"))
        with psycopg.connect(make_conninfo(dsn, options="-c lock_timeout=200")) as reader:
            assert reader.execute("SELECT count(*) FROM items").fetchone()[0] == len(items)
            assert reader.execute("SELECT count(duplicate_of) FROM items").fetchone()[0] == 0  # not yet
    finally:
        blocker.commit()
        blocker.close()
    out, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    assert conn.execute("SELECT count(duplicate_of) FROM items").fetchone()[0] == 8 * 3


#: pgdedup.mark_duplicates called from a session of its own, as from psql (argv: dsn, collection, column).
SQL_MARK = ("import sys, psycopg; conn = psycopg.connect(sys.argv[1], application_name='pgdedup dedupe ' + sys.argv[2]); "
            "conn.execute('SELECT * FROM pgdedup.mark_duplicates(%s, p_column => %s)', sys.argv[2:]); conn.commit()")


@pytest.mark.parametrize("way", ["cli", "sql"])
def test_two_runs_adding_their_own_columns_to_one_table_do_not_deadlock(conn, dsn, items, way):
    """Two collections of one table, two CLI runs each adding its own marking column while
    another session holds the table: both runs queue, and neither holds a lock the other's
    ALTER waits for (each adds its column before it locks the table to read it; had both taken
    ACCESS SHARE first, both would get it when the table is free and then wait for each other's
    ALTER), so no deadlock is found past deadlock_timeout; both finish with the same marks."""
    pgdedup.index("items", "id", ["title", "body"], name="items2", dsn=dsn, progress=False)
    holder = psycopg.connect(dsn)
    holder.execute("LOCK TABLE items IN ACCESS EXCLUSIVE MODE")
    runs = []
    try:
        runs = [cli_background("dedupe", name, "--column", column, "--dsn", dsn) if way == "cli" else
                subprocess.Popen([sys.executable, "-c", SQL_MARK, dsn, name, column], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
                for name, column in (("items", "mark_a"), ("items2", "mark_b"))]
        wait_for(conn, "SELECT count(*) = 2 FROM pg_stat_activity WHERE application_name "
                        "LIKE 'pgdedup dedupe items%%' AND wait_event_type = 'Lock' AND datname = current_database()")
    finally:
        holder.rollback()  # (a cycle, if any, forms from here: both would get ACCESS SHARE at once)
        holder.close()
    try:
        for run in runs:
            out, err = run.communicate(timeout=60)
            assert run.returncode == 0, err
    finally:
        for run in runs:
            if run.poll() is None:
                run.kill()
    marks = conn.execute("SELECT count(mark_a), count(*) FILTER (WHERE mark_a IS NOT DISTINCT FROM mark_b) "
                         "FROM items").fetchone()
    assert marks == (8 * 3, len(items))


#: The advisory lock class of a table's marks (sql/0028_source_lock.sql's lock_marks).
MARKS_LOCK = 1885824102


@pytest.mark.parametrize("second", ["dedupe", "unmark"])
def test_writers_of_one_tables_marks_queue_on_its_lock_not_on_its_rows(conn, dsn, items, second):
    """Two collections of one table: while one writes its marks (a transaction left open after
    mark_duplicates), a CLI run writing the other's marks, or clearing them, waits on the table's
    marks lock (revision 28) before it has locked any row: their row locks never interleave (two
    UPDATEs whose synchronized scans start at different blocks could deadlock). It finishes once
    the first commits, with the same marks."""
    pgdedup.index("items", "id", ["title", "body"], name="items2", dsn=dsn, progress=False)
    for name, column in (("items", "mark_a"), ("items2", "mark_b")):
        pgdedup.dedupe(name, column=column, dsn=dsn)
    if second == "dedupe":
        pgdedup.unmark("items2", dsn=dsn)
    pgdedup.unmark("items", dsn=dsn)
    first = psycopg.connect(dsn)
    run = None
    try:
        first.execute("SELECT * FROM pgdedup.mark_duplicates('items', p_column => 'mark_a')")
        assert first.execute("SELECT count(mark_a) FROM items").fetchone()[0] == 8 * 3  # written, not committed
        args = ("dedupe", "items2", "--column", "mark_b") if second == "dedupe" else ("unmark", "items2")
        run = cli_background(*args, "--dsn", dsn)
        wait_for(conn, "SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                       "WHERE l.locktype = 'advisory' AND NOT l.granted AND l.classid = %s AND l.objid = %s "
                       "AND l.objsubid = 1 AND a.application_name LIKE 'pgdedup " + second + "%%')",
                 (MARKS_LOCK, conn.execute("SELECT 'items'::regclass::oid").fetchone()[0]), run=run)
        assert not conn.execute("SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                                "WHERE l.locktype = 'transactionid' AND NOT l.granted "
                                "AND a.application_name LIKE 'pgdedup %%')").fetchone()[0]
    finally:
        first.commit()
        first.close()
        if run is not None:
            out, err = run.communicate(timeout=60)
            assert run.returncode == 0, err
    marks = conn.execute("SELECT count(mark_a), count(mark_b), count(*) FILTER (WHERE mark_a IS NOT DISTINCT FROM mark_b) "
                         "FROM items").fetchone()
    assert marks == ((8 * 3, 8 * 3, len(items)) if second == "dedupe" else (8 * 3, 0, len(items) - 8 * 3))


def test_a_view_is_refused_for_in_place_marking(conn, dsn, items):
    conn.execute("CREATE VIEW items_v AS SELECT * FROM items")
    pgdedup.index("items_v", "id", ["title", "body"], dsn=dsn, progress=False)
    with pytest.raises(pgdedup.UnsafeOperation, match="is not a table.*--no-alter"):
        pgdedup.dedupe("items_v", dsn=dsn)
    assert pgdedup.dedupe("items_v", alter=False, dsn=dsn).duplicates == 8 * 3


#: ``pgdedup`` with the exact checks cut into batches of 20 texts, so that a small table gives
#: the checker processes several batches (argv: the CLI's arguments).
SMALL_BATCHES = ("import sys, pgdedup.exact; pgdedup.exact.BATCH = 20; from pgdedup.cli import main; "
                 "sys.exit(main(sys.argv[1:]))")


def _ddl_queued_behind_a_run(conn, dsn, table: str, held_on: str, argv: list[str], app: str) -> str:
    """Start the run ``argv`` (a process), hold it right after its guard by locking pgdedup's
    table ``held_on``, queue an ``ALTER TABLE table`` behind the run's lock on ``table``, let the
    run go on; returns the run's stderr once it has ended (after the ALTER went through)."""
    blocker = psycopg.connect(dsn)
    blocker.execute(sql.SQL("LOCK TABLE pgdedup.{} IN ACCESS EXCLUSIVE MODE").format(sql.Identifier(held_on)))
    run = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(conn, _waiting(app), run=run)
        alter = subprocess.Popen([sys.executable, "-c", "import sys, psycopg; psycopg.connect(sys.argv[1], "
                                  "autocommit=True).execute(sys.argv[2])", dsn,
                                  f"ALTER TABLE {table} ADD COLUMN note text"])
        wait_for(conn, "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE relation = %s::regclass "
                       "AND mode = 'AccessExclusiveLock' AND NOT granted)", (table,))
    finally:
        blocker.rollback()
        blocker.close()
    out, err = run.communicate(timeout=120)
    assert alter.wait(timeout=60) == 0
    assert run.returncode == 1, (out, err)
    return err


def test_exact_checks_give_way_to_ddl_queued_behind_the_run(conn, dsn):
    """An application's ALTER TABLE waits for the dedupe's lock on the table; the checker
    processes' next reads then queued behind the ALTER, the ALTER waited for the dedupe, the
    dedupe waited (in Python) for its checkers: a hang PostgreSQL cannot see, and every query of
    the table queued behind the ALTER. The checkers now give up their wait after a moment, the
    run stops with a one-line error, and the ALTER goes through."""
    sample.load(conn, 2000, "feed", seed=3)
    conn.commit()
    pgdedup.index("feed", "feed_item_id", ["title", "content"], dsn=dsn, progress=False)
    err = _ddl_queued_behind_a_run(conn, dsn, "feed", "candidates",  # written by the run after its guard only
                                   [sys.executable, "-c", SMALL_BATCHES, "dedupe", "feed", "--dsn", dsn],
                                   "pgdedup dedupe feed")
    assert "another session is waiting to change public.feed" in err, err
    assert "note" in _columns(conn, "feed")


def test_an_index_from_the_queue_gives_way_to_ddl_queued_behind_the_run(conn, dsn, items):
    """The same cycle in an index run: its source-lock connection holds the table for the whole
    run, and its main session reads the queued keys' rows on another connection, chunk after
    chunk. An ALTER queued meanwhile made the next read wait for it, the ALTER wait for the
    source-lock connection, idle in the same process: a hang. The read now gives way."""
    pgdedup.track("items", dsn=dsn)
    pgdedup.index("items", dsn=dsn, progress=False)
    conn.execute("UPDATE items SET body = body || ' again'")
    conn.commit()
    err = _ddl_queued_behind_a_run(conn, dsn, "items", "queue",
                                   [sys.executable, "-m", "pgdedup", "index", "items", "--chunk-size", "5",
                                    "--no-progress", "--dsn", dsn], "pgdedup index items")
    assert "another session is waiting to change public.items" in err, err
    assert "note" in _columns(conn, "items")


def test_a_queue_run_killed_between_chunks_leaves_rows_indexed_true(conn, dsn, items):
    """rows_indexed of an index from the queue was moved once, at the end, by what that run
    signed: chunks a killed run had committed were never counted (the count drifted for good,
    negative once every row was deleted). Each chunk's transaction moves it now."""
    pgdedup.track("items", dsn=dsn)
    pgdedup.index("items", dsn=dsn, progress=False)
    conn.execute("INSERT INTO items (id, title, body) SELECT g, 'title ' || g, "
                 "'a text about item number ' || g || ' and its own words ' || md5(g::text) FROM generate_series(10001, 14000) g")
    conn.commit()
    run = cli_background("index", "items", "--chunk-size", "100", "--no-progress", "--dsn", dsn)
    with psycopg.connect(dsn, autocommit=True) as probe:
        wait_for(probe, "SELECT (SELECT count(*) FROM pgdedup.queue) < 3000", run=run, timeout=120)
        os.killpg(run.pid, signal.SIGKILL)
        run.wait(timeout=30)
        stored, signed = probe.execute("SELECT rows_indexed, (SELECT count(*) FROM pgdedup.signatures) "
                                       "FROM pgdedup.collections").fetchone()
        assert stored == signed and probe.execute("SELECT count(*) FROM pgdedup.queue").fetchone()[0] > 0
    pgdedup.index("items", dsn=dsn, progress=False)
    assert pgdedup.status("items", dsn=dsn)[0]["rows_indexed"] == len(items) + 4000
