"""The application's hot path: ``pgdedup.collection(name, db)`` with ``check`` and ``add`` on an
open connection, inside the application's own transactions."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

import pgdedup

from planted import create, make_rows


@pytest.fixture
def feed(conn, dsn):
    rows, groups, originals = make_rows("uuid", groups=4, copies=2, unrelated=20)
    create(conn, "feed", "uuid", rows)
    pgdedup.index("feed", "id", ["title", "body"], dsn=dsn, progress=False)
    return {r[0]: r for r in rows}, groups, originals


def test_check_finds_near_duplicates_of_a_new_text(conn, dsn, feed):
    rows, groups, originals = feed
    original = rows[originals[0]]
    text = f"{original[1]}\n{original[2]}"
    with pgdedup.collection("feed", dsn) as coll:
        found = coll.check(text)
        assert found[0] == (str(originals[0]), 1.0)
        assert {k for k, _ in found} >= {str(k) for k in groups[0]}
        assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
        assert coll.check("") == [] and coll.check("nothing like any stored text at all") == []


def test_add_inside_the_apps_transaction(conn, dsn, feed):
    rows, groups, originals = feed
    original = rows[originals[1]]
    new_a, new_b = uuid.uuid4(), uuid.uuid4()
    with psycopg.connect(dsn) as app:
        coll = pgdedup.collection("feed", app)
        app.execute("INSERT INTO feed VALUES (%s, %s, %s, now())", (new_a, original[1], original[2] + " extra"))
        assert coll.add(new_a) == 1
        app.execute("INSERT INTO feed VALUES (%s, %s, %s, now())", (new_b, original[1], original[2] + " more"))
        assert coll.add(str(new_b).upper()) == 1  # an uppercase uuid literal is the same key
        found = dict(coll.check(f"{original[1]}\n{original[2]} extra"))
        assert found[str(new_a)] == 1.0 and str(new_b) in found, "two items of one transaction see each other"
        assert app.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        app.rollback()
        assert str(new_a) not in dict(coll.check(f"{original[1]}\n{original[2]} extra"))
        app.execute("INSERT INTO feed VALUES (%s, %s, %s, now())", (new_a, original[1], original[2] + " extra"))
        coll.add(new_a)
        app.commit()
    stored = conn.execute("SELECT count(*) FROM pgdedup.signatures WHERE row_key = %s", (str(new_a),)).fetchone()[0]
    assert stored == 1


def test_added_rows_reach_the_incremental_dedupe(conn, dsn, feed):
    rows, groups, originals = feed
    pgdedup.dedupe("feed", keep_order="published_at, id", dsn=dsn)
    original = rows[originals[2]]
    early = uuid.uuid4()
    with psycopg.connect(dsn) as app:
        app.execute("INSERT INTO feed VALUES (%s, %s, %s, '2000-01-01')", (early, original[1], original[2]))
        pgdedup.collection("feed", app).add(early)
    result = pgdedup.dedupe("feed", keep_order="published_at, id", dsn=dsn)
    assert result.kind == "incremental"
    marks = dict(conn.execute("SELECT id, duplicate_of FROM feed").fetchall())
    assert marks[early] is None and marks[originals[2]] == early  # the earlier copy is now the keeper
    pgdedup.dedupe("feed", keep_order="published_at, id", full=True, dsn=dsn)
    assert dict(conn.execute("SELECT id, duplicate_of FROM feed").fetchall()) == marks


def test_concurrent_adds_do_not_wait_for_each_other(conn, dsn, feed):
    a, b = uuid.uuid4(), uuid.uuid4()
    with psycopg.connect(dsn) as one, psycopg.connect(dsn) as two:
        for app, key in ((one, a), (two, b)):
            app.execute("INSERT INTO feed VALUES (%s, 'title', 'some body text of a new item here', now())", (key,))
            assert pgdedup.collection("feed", app).add(key) == 1  # the other transaction is still open
        one.commit()
        two.commit()


@contextmanager
def _adding_while_held(dsn: str) -> Iterator[tuple[psycopg.Connection, uuid.UUID]]:
    """An app transaction that has inserted a new row, while an index run holds the collection."""
    holder = psycopg.connect(dsn, application_name="pgdedup index feed")
    holder.execute("SELECT pgdedup.lock_collection(pgdedup.collection_id('feed'), true)")
    key = uuid.uuid4()
    try:
        with psycopg.connect(dsn) as app:
            app.execute("INSERT INTO feed VALUES (%s, 'title', 'a body', now())", (key,))
            yield app, key
    finally:
        holder.close()


def test_add_while_a_run_holds_the_collection(conn, dsn, feed):
    with _adding_while_held(dsn) as (app, key):
        with pytest.raises(pgdedup.CollectionBusy, match="pgdedup index feed"):
            pgdedup.collection("feed", app).add(key)
    pgdedup.track("feed", dsn=dsn)
    pgdedup.index("feed", dsn=dsn, progress=False)
    with _adding_while_held(dsn) as (app, key):
        assert pgdedup.collection("feed", app).add(key) == 0  # left to the queue
    assert conn.execute("SELECT count(*) FROM pgdedup.queue WHERE row_key = %s", (str(key),)).fetchone()[0] == 1


def test_every_command_on_the_handles_connection(conn, dsn, feed):
    """The handle's commands are the free functions on its connection: on its own connection each
    commits; on the application's, they stay in the application's transaction."""
    rows, groups, originals = feed
    with pgdedup.collection("feed", dsn) as coll:
        conn.execute("ALTER TABLE feed ADD COLUMN duplicate_of uuid")  # declared, as an app does
        result = coll.dedupe(keep_order="published_at, id")
        assert result.kind == "full" and result.duplicates == sum(len(g) - 1 for g in groups)
        assert coll.status()["marked"] == result.duplicates
        assert {k for k, _ in coll.similar(key=originals[0])} == {str(k) for k in groups[0]} - {str(originals[0])}
        marks = {frozenset((str(a), str(b))) for a, b in conn.execute(
            "SELECT id, duplicate_of FROM feed WHERE duplicate_of IS NOT NULL")}
        assert {frozenset((a, b)) for a, b, _ in coll.pairs()} >= marks  # each mark is a pair at the threshold
        assert coll.track() is True and coll.track(on=False) is False
    marked = conn.execute("SELECT count(*) FROM feed WHERE duplicate_of IS NOT NULL").fetchone()[0]
    assert marked == result.duplicates, "committed by the handle"
    with psycopg.connect(dsn) as app:
        coll = pgdedup.collection("feed", app)
        assert coll.unmark() == marked
        assert app.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        app.rollback()
    assert conn.execute("SELECT count(*) FROM feed WHERE duplicate_of IS NOT NULL").fetchone()[0] == marked
