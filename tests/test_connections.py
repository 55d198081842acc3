"""The API on whatever an application has: a DSN, a SQLAlchemy URL, an Engine, a psycopg
Connection or a SQLAlchemy Connection. On a connection, pgdedup works inside the caller's
transaction and never commits it: a rollback takes everything back."""

from __future__ import annotations

import psycopg
import pytest
import sqlalchemy as sa

import pgdedup

from planted import create, make_rows


@pytest.fixture
def items(conn, dsn):
    rows, groups, _ = make_rows("bigint", groups=5, copies=2, unrelated=10)
    create(conn, "items", "bigint", rows)
    return sum(len(g) - 1 for g in groups)


def _url(dsn: str) -> str:
    """The same database as a SQLAlchemy URL (psycopg driver), as an app configures it."""
    params = psycopg.conninfo.conninfo_to_dict(dsn)
    return f"postgresql+psycopg://{params['user']}@/{params['dbname']}?host={params['host']}&port={params['port']}"


def test_sqlalchemy_url_and_engine(conn, dsn, items):
    url = _url(dsn)
    assert pgdedup.index("items", "id", ["title", "body"], dsn=url, progress=False).signed > 0
    engine = sa.create_engine(url)
    try:
        assert pgdedup.dedupe("items", dsn=engine).duplicates == items
        assert pgdedup.status("items", dsn=engine)[0]["marked"] == items
        assert len(list(pgdedup.pairs("items", dsn=url))) >= items
    finally:
        engine.dispose()


def test_inside_a_psycopg_transaction_and_rolled_back(conn, dsn, items):
    pgdedup.index("items", "id", ["title", "body"], dsn=dsn, progress=False)
    conn.execute("ALTER TABLE items ADD COLUMN duplicate_of bigint")  # declared by the app
    with psycopg.connect(dsn) as app:
        app.execute("SET search_path = public")
        result = pgdedup.dedupe("items", dsn=app)
        assert result.duplicates == items
        assert app.execute("SELECT count(duplicate_of) FROM items").fetchone()[0] == items  # visible inside
        assert app.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS, "not committed"
        assert app.execute("SHOW search_path").fetchone()[0] == "public", "the caller's search_path is back"
        assert conn.execute("SELECT count(duplicate_of) FROM items").fetchone()[0] == 0  # not outside
        app.rollback()
        assert pgdedup.status("items", dsn=app)[0]["marked"] == 0
        pgdedup.dedupe("items", dsn=app)
        app.commit()
    assert conn.execute("SELECT count(duplicate_of) FROM items").fetchone()[0] == items


def test_inside_a_sqlalchemy_transaction(conn, dsn, items):
    pgdedup.index("items", "id", ["title", "body"], dsn=dsn, progress=False)
    engine = sa.create_engine(_url(dsn))
    try:
        with engine.connect() as app:
            with app.begin() as tx:
                assert pgdedup.dedupe("items", alter=False, dsn=app).duplicates == items
                assert app.execute(sa.text("SELECT count(duplicate_of) FROM pgdedup.items_duplicates")).scalar() == items
                tx.rollback()
            assert app.execute(sa.text("SELECT to_regclass('pgdedup.items_duplicates')")).scalar() is None
    finally:
        engine.dispose()


def test_operations_that_commit_as_they_go_refuse_a_connection(conn, dsn, items):
    with psycopg.connect(dsn) as app:
        with pytest.raises(pgdedup.InvalidArgument, match="index commits as it goes"):
            pgdedup.index("items", "id", ["title", "body"], dsn=app)
        with pytest.raises(pgdedup.InvalidArgument, match="watch commits as it goes"):
            pgdedup.watch("items", dsn=app)


def test_no_runtime_alter_inside_a_callers_transaction(conn, dsn, items):
    pgdedup.index("items", "id", ["title", "body"], dsn=dsn, progress=False)
    with psycopg.connect(dsn) as app:
        with pytest.raises(pgdedup.InvalidArgument, match="declare it in your model or migration"):
            pgdedup.dedupe("items", dsn=app)
    assert conn.execute("SELECT count(*) FROM pg_attribute WHERE attrelid = 'items'::regclass "
                        "AND attname = 'duplicate_of'").fetchone()[0] == 0



def test_a_callers_autocommit_connection_and_a_materialized_view_source(conn, dsn, items):
    """A caller's autocommit connection has no transaction to work in: each call makes one of its
    own there, so the collection's lock and the source's spans its statements (auto's checks
    read a temporary table the deciding statement made) and the call is all or nothing. A
    materialized view source is checked without a lock (LOCK TABLE refuses it)."""
    pgdedup.index("items", "id", ["title", "body"], dsn=dsn, progress=False)
    conn.execute("ALTER TABLE items ADD COLUMN duplicate_of bigint")
    with psycopg.connect(dsn, autocommit=True) as app:
        assert pgdedup.dedupe("items", alter=False, dsn=app).duplicates == items
        assert pgdedup.dedupe("items", dsn=app, full=True).duplicates == items
        marks = conn.execute("SELECT id, duplicate_of FROM items ORDER BY id").fetchall()
        assert pgdedup.dedupe("items", dsn=dsn, full=True).duplicates == items
        assert conn.execute("SELECT id, duplicate_of FROM items ORDER BY id").fetchall() == marks
        a, b = [r[0] for r in app.execute("SELECT id FROM items ORDER BY id LIMIT 2")]
        assert pgdedup.explain("items", a, b, dsn=app).estimate >= 0
        assert app.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert app.execute("SHOW search_path").fetchone()[0] == '"$user", public'
        with pytest.raises(pgdedup.InvalidArgument):  # a call that fails has written nothing
            pgdedup.dedupe("items", keep_order="no_such_column", dsn=app)
        assert app.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    conn.execute("CREATE MATERIALIZED VIEW items_mv AS SELECT id, title, body FROM items")
    pgdedup.index("items_mv", "id", ["title", "body"], dsn=dsn, progress=False)
    assert pgdedup.dedupe("items_mv", alter=False, dsn=dsn).duplicates == items


# What a call leaves on the caller's connection (found by a review of the session's state) -----

def test_a_sqlalchemy_connection_that_has_not_begun_commits_what_pgdedup_wrote(conn, dsn, items):
    """pgdedup's statements go to the DBAPI connection, past SQLAlchemy: on a Connection that had
    run nothing yet, SQLAlchemy knew of no transaction, so its commit() committed nothing and
    the pool's reset rolled the marks (and a handle's added row) back. It is begun first now."""
    pgdedup.index("items", "id", ["title", "body"], dsn=dsn, progress=False)
    conn.execute("ALTER TABLE items ADD COLUMN duplicate_of bigint")
    engine = sa.create_engine(_url(dsn))
    try:
        with engine.connect() as app:
            assert pgdedup.dedupe("items", dsn=app).duplicates == items
            assert app.in_transaction()
            app.commit()
        assert conn.execute("SELECT count(duplicate_of) FROM items").fetchone()[0] == items
        with engine.connect() as app:
            coll = pgdedup.collection("items", app)
            app.commit()  # the handle's set-up read, committed: the next call begins again
            conn.execute("INSERT INTO items (id, title, body) VALUES (9001, 'a new title', 'a new body of text')")
            assert coll.add(9001) == 1
            app.commit()
        assert conn.execute("SELECT count(*) FROM pgdedup.signatures WHERE row_key = '9001'").fetchone()[0] == 1
    finally:
        engine.dispose()


@pytest.mark.parametrize("how", ["SET LOCAL", "SET"])
def test_the_callers_search_path_comes_back_as_it_was_local_or_not(conn, dsn, items, how):
    """A pooled session's per-transaction path (``SET LOCAL search_path = tenant``) must end with
    the transaction: pgdedup put it back with a session-level set, so the next transaction on
    that connection read the tenant's tables. It pins and restores local to the transaction."""
    pgdedup.index("items", "id", ["title", "body"], dsn=dsn, progress=False)
    with psycopg.connect(dsn) as app:
        default = app.execute("SHOW search_path").fetchone()[0]
        app.commit()
        app.execute(f"{how} search_path = tenant_x, public")
        assert pgdedup.status("items", dsn=app)[0]["rows_indexed"] > 0
        pgdedup.collection("items", app).check("some text")
        assert app.execute("SHOW search_path").fetchone()[0] == "tenant_x, public"
        app.commit()
        assert app.execute("SHOW search_path").fetchone()[0] == (default if how == "SET LOCAL" else "tenant_x, public")


def test_pairs_on_a_callers_connection_leave_it_to_the_caller_between_pairs(conn, dsn, items):
    """``pairs`` is a generator: on the caller's connection it held pgdedup's pinned search_path
    and, on an autocommit connection, the call's own transaction while the caller's loop ran, so
    the loop's unqualified names failed and leaving it early rolled the loop's writes back."""
    pgdedup.index("items", "id", ["title", "body"], dsn=dsn, progress=False)
    conn.execute("CREATE TABLE seen (a text, b text)")
    with psycopg.connect(dsn, autocommit=True) as app:
        for a, b, _ in pgdedup.pairs("items", dsn=app):
            app.execute("INSERT INTO seen VALUES (%s, %s)", (a, b))  # unqualified, autocommitted
            assert app.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
            break
        assert app.execute("SHOW search_path").fetchone()[0] == '"$user", public'
    assert conn.execute("SELECT count(*) FROM seen").fetchone()[0] == 1


def test_a_refused_call_leaves_the_callers_transaction_usable(conn, dsn, items):
    """A call on the caller's connection runs in a savepoint: a refusal (here marking a text
    column, which aborted the caller's transaction) takes back only what the call did."""
    pgdedup.index("items", "id", ["title", "body"], dsn=dsn, progress=False)
    conn.execute("CREATE TABLE app_log (x int)")
    with psycopg.connect(dsn) as app:
        app.execute("INSERT INTO app_log VALUES (1)")
        with pytest.raises(pgdedup.UnsafeOperation, match="refusing to mark column"):
            pgdedup.dedupe("items", column="body", dsn=app)
        assert app.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        with pytest.raises(pgdedup.InvalidArgument):
            pgdedup.dedupe("items", keep_order="no_such_column", alter=False, dsn=app)
        app.execute("INSERT INTO app_log VALUES (2)")
        app.commit()
    assert conn.execute("SELECT count(*) FROM app_log").fetchone()[0] == 2


def test_progress_leaves_the_callers_transaction_as_it_was(conn, dsn, items, capsys):
    """``progress=True`` asks the server for stage reports in the call's transaction; the setting
    is put back after it, so the caller's later pgdedup SQL in that transaction reports nothing."""
    pgdedup.index("items", "id", ["title", "body"], dsn=dsn, progress=False)
    with psycopg.connect(dsn) as app:
        before = app.execute("SELECT current_setting('pgdedup.progress', true)").fetchone()[0]
        pgdedup.dedupe("items", alter=False, dsn=app, progress=True)
        assert "keep-order walk" in capsys.readouterr().err
        assert app.execute("SELECT coalesce(current_setting('pgdedup.progress', true), '')").fetchone()[0] == (before or "")
        messages: list[str] = []
        app.add_notice_handler(lambda d: messages.append(d.message_primary or ""))
        app.execute("SELECT * FROM pgdedup.find_duplicates('items')")
        assert not [m for m in messages if m.startswith("pgdedup: ")]
        app.rollback()


def test_a_handle_leaves_a_connection_without_a_transaction_as_it_found_it(conn, dsn, items):
    """Loading a handle's settings is a read: on a connection with no transaction open it does
    not leave one (a SQLAlchemy Connection begun by it made the app's own ``begin()`` raise; a
    psycopg one sat idle in transaction)."""
    pgdedup.index("items", "id", ["title", "body"], dsn=dsn, progress=False)
    engine = sa.create_engine(_url(dsn))
    try:
        with engine.connect() as app:
            coll = pgdedup.collection("items", app)
            assert not app.in_transaction()
            with app.begin():
                assert coll.check("some text") is not None
    finally:
        engine.dispose()
    with psycopg.connect(dsn) as app:
        pgdedup.collection("items", app)
        assert app.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def test_a_handle_that_fails_to_load_leaves_the_callers_connection_as_it_was(conn, dsn, items):
    """A handle for a missing collection raises; the caller's connection is as it was at once
    (its search_path, no open savepoint, no transaction left begun), so what the caller writes
    next is kept. The session was left open until the failed handle was collected, whose
    clean-up then rolled the caller's writes in between back."""
    conn.execute("CREATE TABLE audit (what text)")
    with psycopg.connect(dsn) as app:
        with pytest.raises(pgdedup.CollectionNotFound) as raised:
            pgdedup.collection("no_such_collection", app)
        assert app.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        app.execute("INSERT INTO audit VALUES ('not found')")  # unqualified: the caller's path
        app.commit()
        del raised
    assert conn.execute("SELECT count(*) FROM audit").fetchone()[0] == 1
    engine = sa.create_engine(_url(dsn))
    try:
        with engine.connect() as app:
            with pytest.raises(pgdedup.CollectionNotFound):
                pgdedup.collection("no_such_collection", app)
            assert not app.in_transaction()
    finally:
        engine.dispose()


def test_calls_on_a_connection_in_pipeline_mode(conn, dsn, items):
    """Pipeline mode refuses a query of several statements; the call's savepoint, pin and restore
    then go one by one (they are batched anyway), and the caller's pipeline goes on."""
    pgdedup.index("items", "id", ["title", "body"], dsn=dsn, progress=False)
    conn.execute("CREATE TABLE audit (what text)")
    with psycopg.connect(dsn) as app:
        coll = pgdedup.collection("items", app)
        with app.pipeline():
            app.execute("INSERT INTO audit VALUES ('before')")
            assert coll.check("some text about nothing in particular") == []
            assert pgdedup.similar("items", text="some other text", dsn=app) == []
            # status names its columns from the rows (no cursor description in a pipeline)
            assert pgdedup.status("items", dsn=app)[0]["name"] == coll.status()["name"] == "items"
            app.execute("INSERT INTO audit VALUES ('after')")
        app.commit()
    assert conn.execute("SELECT count(*) FROM audit").fetchone()[0] == 2
