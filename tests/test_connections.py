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
