"""Living collections: tracking, indexing from the queue, and an incremental dedupe whose marks
equal, row for row, those of a collection built from scratch on the final table, by estimate
and with verify "auto" (exact Jaccard for the ambiguous pairs).

The oracle is independent of the incremental machinery: a second collection over the same table,
indexed from nothing and deduped in full (by the plain walk, itself checked against brute force
in test_oracles_sql.py), after every batch of random inserts, text edits, keep-order edits and
deletes. Small buckets caps (max_bucket 2-3) make capped buckets, whose leaders move with every
change, the common case rather than the exception.
"""

from __future__ import annotations

import os
import random
import re
import signal
import time
import warnings

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import pgdedup
from pgdedup.exact import store_checks

import families
from families import PARAMS
from clirun import cli, cli_background, one_line_error
from crashes import wait_for

def _marks_column(conn) -> dict[int, int | None]:
    return dict(conn.execute("SELECT id, duplicate_of FROM docs ORDER BY id").fetchall())


def _stored_marks(conn, name: str, target: str) -> list[tuple[str, str, float]]:
    """(row_key, duplicate_of, similarity) of collection ``name``'s stored result for ``target``."""
    return conn.execute("SELECT row_key, duplicate_of, similarity FROM pgdedup.duplicates "
                        "WHERE collection_id = pgdedup.collection_id(%s) AND target = %s ORDER BY row_key",
                        (name, target)).fetchall()


def _marks_fresh(conn, dsn: str, keep_order: str, max_bucket: int, verify: str = "auto") -> dict[int, int | None]:
    """The oracle: a new collection over the final table, indexed and deduped from scratch."""
    conn.execute("SELECT pgdedup.drop_collection('fresh') FROM pgdedup.collections WHERE name = 'fresh'")
    conn.commit()
    pgdedup.index("docs", "id", ["body"], name="fresh", params=PARAMS, dsn=dsn, progress=False)
    result = pgdedup.dedupe("fresh", alter=False, keep_order=keep_order, max_bucket=max_bucket, verify=verify,
                            dsn=dsn)
    assert result.kind == "full"
    rows = conn.execute("SELECT d.id, v.duplicate_of FROM docs d LEFT JOIN pgdedup.fresh_duplicates v USING (id) "
                        "ORDER BY d.id").fetchall()
    conn.commit()
    return dict(rows)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), tracked=st.booleans(), max_bucket=st.sampled_from([2, 3, 100]),
       keep_order=st.sampled_from(["published_at, id", "published_at desc", "id desc"]),
       verify=st.sampled_from(["estimate", "auto"]), length=st.sampled_from([24, 40]))
def test_incremental_marks_equal_a_fresh_full_run(conn, dsn, seed, tracked, max_bucket, keep_order, verify, length):
    rng = random.Random(seed)
    conn.execute("DROP TABLE IF EXISTS docs CASCADE")
    pgdedup.migrate(dsn)
    conn.execute("SELECT pgdedup.drop_collection(name) FROM pgdedup.collections")
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text, published_at int)")
    conn.commit()
    next_id = [0]
    families.apply(conn, rng, 30, next_id, tracked=False, length=length)
    pgdedup.index("docs", "id", ["body"], params=PARAMS, dsn=dsn, progress=False)
    if tracked:
        pgdedup.track("docs", dsn=dsn)
    first = pgdedup.dedupe("docs", keep_order=keep_order, max_bucket=max_bucket, verify=verify, dsn=dsn)
    assert first.kind == "full"
    for _ in range(3):
        families.apply(conn, rng, rng.randrange(1, 12), next_id, tracked, length)
        pgdedup.index("docs", dsn=dsn, progress=False)
        result = pgdedup.dedupe("docs", keep_order=keep_order, max_bucket=max_bucket, verify=verify, dsn=dsn)
        assert result.kind == "incremental"
        marks = _marks_column(conn)
        assert marks == _marks_fresh(conn, dsn, keep_order, max_bucket, verify)
        # the counts the run returns (kept with the result and adjusted since the full run) against the marks
        assert result.duplicates == sum(v is not None for v in marks.values())
        assert result.groups == len({v for v in marks.values() if v is not None})
    # a full run over the stored result (it writes only what differs) stores what a fresh one does
    families.apply(conn, rng, rng.randrange(1, 12), next_id, tracked, length)
    pgdedup.index("docs", dsn=dsn, progress=False)
    full = pgdedup.dedupe("docs", keep_order=keep_order, max_bucket=max_bucket, verify=verify, full=True, dsn=dsn)
    assert full.kind == "full"
    assert _marks_column(conn) == _marks_fresh(conn, dsn, keep_order, max_bucket, verify)
    assert _stored_marks(conn, "docs", "column") == _stored_marks(conn, "fresh", "view")
    conn.commit()


# tracking --------------------------------------------------------------------------------------

@pytest.fixture
def docs(conn, dsn):
    rng = random.Random(1)
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text, published_at int)")
    conn.commit()
    families.apply(conn, rng, 40, [0], tracked=False)
    pgdedup.index("docs", "id", ["body"], params=PARAMS, dsn=dsn, progress=False)
    return rng


def _queue(conn) -> list[str | None]:
    rows = conn.execute("SELECT row_key FROM pgdedup.queue ORDER BY seq").fetchall()
    conn.commit()
    return [r[0] for r in rows]


def test_tracking_queues_keys_in_the_writers_transaction(conn, dsn, docs):
    proc = cli("track", "docs", "--dsn", dsn)
    assert proc.returncode == 0, proc.stderr
    assert _queue(conn) == [None], "tracking starts with one full comparison"
    pgdedup.index("docs", dsn=dsn, progress=False)
    assert _queue(conn) == []

    listener = psycopg.connect(dsn, autocommit=True)
    listener.execute("LISTEN pgdedup")
    with conn.transaction():
        conn.execute("INSERT INTO docs VALUES (1000, 'a new text here', 1), (1001, NULL, 2)")
        conn.execute("UPDATE docs SET body = 'changed text' WHERE id = 1")
        conn.execute("DELETE FROM docs WHERE id = 2")
        raise psycopg.Rollback()
    assert _queue(conn) == [], "a rolled-back write queues nothing"
    a, b = [r[0] for r in conn.execute("SELECT id FROM docs ORDER BY id LIMIT 2")]
    with conn.transaction():  # one transaction, one notification
        conn.execute("INSERT INTO docs VALUES (1000, 'a new text here', 1), (1001, NULL, 2)")
        conn.execute("UPDATE docs SET id = 3000 WHERE id = %s", (b,))  # a key changed: both keys queued
        conn.execute("DELETE FROM docs WHERE id = %s", (a,))
    assert sorted(_queue(conn)) == sorted(["1000", "1001", str(a), str(b), "3000"])
    notes = [n.payload for n in listener.notifies(timeout=2, stop_after=1)]
    cid = conn.execute("SELECT collection_id FROM pgdedup.collections WHERE name = 'docs'").fetchone()[0]
    conn.commit()
    assert notes == [str(cid)], "the id, not the name: any role may LISTEN"
    listener.close()
    st = pgdedup.status("docs", dsn=dsn)[0]
    assert st["tracked"] is True and st["queued"] == 5

    result = pgdedup.index("docs", dsn=dsn, progress=False)
    assert result.queued == 5 and result.signed == 3 and result.removed == 2  # 1000, 1001, 3000; a, b
    assert _queue(conn) == []
    assert "indexed docs from its queue: 5 changes" in result.summary()
    stored = dict(conn.execute("SELECT row_key, feature_count FROM pgdedup.signatures s "
                               "JOIN pgdedup.collections c USING (collection_id) WHERE c.name = 'docs'").fetchall())
    assert stored["1000"] > 0 and stored["1001"] == 0 and str(a) not in stored and str(b) not in stored
    assert conn.execute("SELECT count(*) FROM docs").fetchone()[0] == len(stored) == result.source_rows
    assert pgdedup.status("docs", dsn=dsn)[0]["rows_indexed"] == len(stored)


def test_a_tracked_partitioned_table_sees_writes_made_to_its_partitions(conn, dsn):
    """Statement triggers on a partitioned table fire for writes made through it, not for those
    addressed to a partition: an index of a tracked partitioned source compares every row, so
    a row inserted (or a text changed) in a partition directly is signed all the same."""
    conn.execute("CREATE TABLE parts (id int PRIMARY KEY, body text) PARTITION BY RANGE (id)")
    conn.execute("CREATE TABLE parts_low PARTITION OF parts FOR VALUES FROM (0) TO (1000)")
    conn.execute("CREATE TABLE parts_high PARTITION OF parts FOR VALUES FROM (1000) TO (2000)")
    conn.execute("INSERT INTO parts SELECT g, 'text number ' || g || ' about things' FROM generate_series(1, 20) g")
    pgdedup.index("parts", "id", ["body"], dsn=dsn, progress=False)
    pgdedup.track("parts", dsn=dsn)
    pgdedup.index("parts", dsn=dsn, progress=False)
    conn.execute("INSERT INTO parts VALUES (1500, 'written through the partitioned table')")
    conn.execute("INSERT INTO parts_high VALUES (1501, 'written to the partition directly')")
    conn.execute("UPDATE parts_low SET body = 'changed in the partition directly' WHERE id = 3")
    result = pgdedup.index("parts", dsn=dsn, progress=False)
    assert result.signed == 3 and result.queued is None  # compared in full, not from the queue
    signed = dict(conn.execute("SELECT row_key, source_md5 FROM pgdedup.signatures").fetchall())
    assert {"1500", "1501"} <= set(signed) and len(signed) == 22
    assert signed["3"] == conn.execute("SELECT md5(body)::uuid FROM parts WHERE id = 3").fetchone()[0]
    assert _queue(conn) == []


def test_truncate_asks_for_a_full_comparison(conn, dsn, docs):
    pgdedup.track("docs", dsn=dsn)
    pgdedup.index("docs", dsn=dsn, progress=False)
    conn.execute("TRUNCATE docs")
    conn.execute("INSERT INTO docs VALUES (1, 'only row left', 1)")
    conn.commit()
    assert _queue(conn) == [None, "1"]
    result = pgdedup.index("docs", dsn=dsn, progress=False)
    assert result.queued is None and result.source_rows == 1 and _queue(conn) == []


def test_tracking_needs_the_tables_owner(conn, dsn, docs):
    conn.execute("CREATE ROLE stranger LOGIN")
    conn.execute("GRANT USAGE ON SCHEMA pgdedup TO stranger")
    conn.execute("GRANT SELECT ON docs TO stranger")
    conn.execute("GRANT SELECT, UPDATE ON ALL TABLES IN SCHEMA pgdedup TO stranger")
    conn.commit()
    params = psycopg.conninfo.conninfo_to_dict(dsn)
    stranger = psycopg.conninfo.make_conninfo(**{**params, "user": "stranger"})
    one_line_error(cli("track", "docs", "--dsn", stranger), "needs its owner", 'role "stranger"')
    assert pgdedup.status("docs", dsn=dsn)[0]["tracked"] is False


def test_writers_need_no_grant_on_pgdedup(conn, dsn, docs):
    pgdedup.track("docs", dsn=dsn)
    conn.execute("CREATE ROLE app LOGIN")
    conn.execute("GRANT INSERT, UPDATE, DELETE, SELECT ON docs TO app")
    conn.commit()
    params = psycopg.conninfo.conninfo_to_dict(dsn)
    with psycopg.connect(**{**params, "user": "app"}) as app:
        app.execute("INSERT INTO docs VALUES (5000, 'written by the app', 1)")
    assert "5000" in _queue(conn)


def test_track_off_removes_triggers_and_queue(conn, dsn, docs):
    pgdedup.track("docs", dsn=dsn)
    assert pgdedup.track("docs", on=False, dsn=dsn) is False
    conn.execute("INSERT INTO docs VALUES (7000, 'not queued', 1)")
    conn.commit()
    assert _queue(conn) == []
    assert conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'docs'::regclass").fetchone()[0] == 0


def _pair_marked(conn, dsn, *, tracked: bool = False, partitioned: bool = False) -> str:
    """Table ``a``: two near-copies (1 kept, 2 its duplicate by ``pub``), indexed (and tracked)
    and deduped; with ``partitioned``, one partition ``a1`` holds them. Returns the query of its marks."""
    body = " ".join(f"w{i}" for i in range(40))
    conn.execute("CREATE TABLE a (id int PRIMARY KEY, body text, pub int)"
                 + (" PARTITION BY RANGE (id)" if partitioned else ""))
    if partitioned:
        conn.execute("CREATE TABLE a1 PARTITION OF a FOR VALUES FROM (0) TO (100)")
    conn.execute("INSERT INTO a VALUES (1, %s, 1), (2, %s, 2)", (body, body + " x"))
    conn.commit()
    pgdedup.index("a", "id", ["body"], dsn=dsn, progress=False)
    if tracked:
        pgdedup.track("a", dsn=dsn)
        pgdedup.index("a", dsn=dsn, progress=False)
    pgdedup.dedupe("a", keep_order="pub", dsn=dsn)
    marks = "SELECT id, duplicate_of FROM a ORDER BY id"
    assert conn.execute(marks).fetchall() == [(1, None), (2, 1)]
    conn.commit()
    return marks


def test_track_off_keeps_a_queued_keep_order_edit_for_the_next_dedupe(conn, dsn):
    """An edit of a keep-order column made while tracked and not indexed yet: stopping tracking
    must not lose it (an untracked index compares texts only), or the incremental dedupe keeps
    the marks of the old order."""
    marks = _pair_marked(conn, dsn, tracked=True)
    conn.execute("UPDATE a SET pub = 0 WHERE id = 2")  # queued by the trigger
    conn.commit()
    pgdedup.track("a", on=False, dsn=dsn)
    pgdedup.index("a", dsn=dsn, progress=False)
    assert pgdedup.dedupe("a", keep_order="pub", dsn=dsn).kind == "incremental"
    assert conn.execute(marks).fetchall() == [(1, 2), (2, None)]  # what a full run decides


@pytest.mark.parametrize("how", ["DELETE FROM a WHERE id = 2", "TRUNCATE a"])
def test_an_untracked_row_inserted_again_gets_its_mark_back(conn, dsn, how):
    """A row of an untracked table deleted and inserted again with its key and text (or the
    table truncated and reloaded) comes back with no mark; index compares texts and sees nothing
    changed, so the incremental dedupe must compare the column with the stored marks (revision
    29), or the row looks kept for good while a full run marks it."""
    marks = _pair_marked(conn, dsn)
    rows = conn.execute("SELECT id, body, pub FROM a ORDER BY id").fetchall()
    conn.execute(how)
    conn.cursor().executemany("INSERT INTO a (id, body, pub) VALUES (%s, %s, %s) ON CONFLICT (id) DO NOTHING", rows)
    conn.commit()
    assert conn.execute(marks).fetchall() == [(1, None), (2, None)]
    pgdedup.index("a", dsn=dsn, progress=False)
    result = pgdedup.dedupe("a", keep_order="pub", dsn=dsn)
    assert result.kind == "incremental" and result.duplicates == 1
    assert conn.execute(marks).fetchall() == [(1, None), (2, 1)]  # what a full run writes


def test_a_row_inserted_again_into_a_tracked_tables_partition_gets_its_mark_back(conn, dsn):
    """The triggers of a partitioned table do not see writes addressed to a partition directly:
    a row deleted and inserted again there is queued by nobody, and index (which compares every
    row of a partitioned source) sees its text unchanged. The incremental dedupe compares the
    whole column for such a source (revision 30), as for an untracked one."""
    marks = _pair_marked(conn, dsn, tracked=True, partitioned=True)
    row = conn.execute("SELECT id, body, pub FROM a WHERE id = 2").fetchone()
    conn.execute("DELETE FROM a1 WHERE id = 2")
    conn.execute("INSERT INTO a1 (id, body, pub) VALUES (%s, %s, %s)", row)
    conn.commit()
    pgdedup.index("a", dsn=dsn, progress=False)
    assert pgdedup.dedupe("a", keep_order="pub", dsn=dsn).kind == "incremental"
    assert conn.execute(marks).fetchall() == [(1, None), (2, 1)]


def test_tracking_started_after_an_untracked_keep_order_edit_decides_it(conn, dsn):
    """A keep-order edit made while untracked is seen by no index (it compares texts): when
    tracking starts, its catch-up must include the decision, so the next dedupe decides in full
    (revision 29) and every later incremental one starts from there."""
    marks = _pair_marked(conn, dsn)
    conn.execute("UPDATE a SET pub = 0 WHERE id = 2")
    conn.commit()
    pgdedup.track("a", dsn=dsn)
    pgdedup.index("a", dsn=dsn, progress=False)
    assert pgdedup.dedupe("a", keep_order="pub", dsn=dsn).kind == "full"
    assert conn.execute(marks).fetchall() == [(1, 2), (2, None)]
    conn.execute("UPDATE a SET pub = 3 WHERE id = 2")  # tracked now: queued, decided incrementally
    conn.commit()
    pgdedup.index("a", dsn=dsn, progress=False)
    assert pgdedup.dedupe("a", keep_order="pub", dsn=dsn).kind == "incremental"
    assert conn.execute(marks).fetchall() == [(1, None), (2, 1)]


def test_drop_holds_the_tables_strong_lock_only_to_remove_its_triggers(conn, dsn, docs):
    """DROP TRIGGER takes the table's ACCESS EXCLUSIVE lock until commit: held through the whole
    drop (unmarking, deleting every signature), it blocked readers of the table for as long."""
    pgdedup.track("docs", dsn=dsn)
    pgdedup.dedupe("docs", dsn=dsn)
    conn.execute("SELECT pg_advisory_lock(4220)")
    conn.execute("CREATE FUNCTION public.hold() RETURNS trigger LANGUAGE plpgsql AS $$ "
                 "BEGIN PERFORM pg_advisory_xact_lock_shared(4220); RETURN NULL; END $$")
    conn.execute("CREATE TRIGGER hold AFTER DELETE ON pgdedup.signatures FOR EACH STATEMENT EXECUTE FUNCTION public.hold()")
    conn.commit()
    run = cli_background("drop", "docs", "--unmark", "--dsn", dsn)
    try:
        wait_for(conn, "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = 'pgdedup drop docs' "
                       "AND wait_event = 'advisory')", run=run)
        assert conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'docs'::regclass").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM pg_locks WHERE relation = 'docs'::regclass "
                            "AND mode = 'AccessExclusiveLock'").fetchone()[0] == 0
        conn.execute("SET lock_timeout = '1s'")
        assert conn.execute("SELECT count(*) FROM docs").fetchone()[0] > 0  # readers pass
        conn.rollback()
    finally:
        conn.execute("SELECT pg_advisory_unlock(4220)")
        conn.commit()
    _, err = run.communicate(timeout=60)
    assert run.returncode == 0, err
    assert conn.execute("SELECT count(*) FROM pgdedup.collections").fetchone()[0] == 0


def test_a_failed_drop_leaves_the_collection_tracked(conn, dsn, docs):
    """drop removes the triggers in a transaction of its own first: when forgetting the
    collection then fails (here the table's own trigger refuses the unmarking), tracking is
    started again, not left off with nothing saying so."""
    pgdedup.track("docs", dsn=dsn)
    pgdedup.dedupe("docs", dsn=dsn)
    conn.execute("CREATE FUNCTION public.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ "
                 "BEGIN RAISE EXCEPTION 'this table refuses updates'; END $$")
    conn.execute("CREATE TRIGGER refuse BEFORE UPDATE ON docs FOR EACH ROW EXECUTE FUNCTION public.refuse()")
    conn.commit()
    with pytest.raises(psycopg.Error, match="this table refuses updates"):
        pgdedup.drop("docs", unmark=True, dsn=dsn)
    assert pgdedup.status("docs", dsn=dsn)[0]["tracked"]
    assert conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'docs'::regclass "
                        "AND tgname LIKE 'pgdedup_track_%%'").fetchone()[0] == 4
    conn.commit()


def test_a_drop_refused_for_a_view_on_its_view_changes_nothing(conn, dsn, docs):
    """A view of the user's on the collection's view makes the drop fail: checked before the
    triggers go, so tracking stays as it was (stopped and started again, it queued "compare every
    row" and made the next dedupe full), and the error names the dependent view."""
    pgdedup.track("docs", dsn=dsn)
    pgdedup.index("docs", dsn=dsn, progress=False)
    pgdedup.dedupe("docs", alter=False, dsn=dsn)
    conn.execute("CREATE VIEW public.report_v AS SELECT * FROM pgdedup.docs_duplicates")
    conn.commit()
    one_line_error(cli("drop", "docs", "--dsn", dsn), "other objects depend on it", "view public.report_v")
    assert _queue(conn) == [] and pgdedup.status("docs", dsn=dsn)[0]["tracked"]
    assert pgdedup.dedupe("docs", alter=False, dsn=dsn).kind == "incremental"
    conn.execute("DROP VIEW public.report_v")
    conn.commit()
    pgdedup.drop("docs", dsn=dsn)
    assert conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'docs'::regclass").fetchone()[0] == 0


def test_pending_rows_are_visible_until_deduped(conn, dsn, docs):
    pgdedup.track("docs", dsn=dsn)
    pgdedup.index("docs", dsn=dsn, progress=False)
    pgdedup.dedupe("docs", dsn=dsn)
    conn.execute("INSERT INTO docs VALUES (8000, 'fresh arrival', 1)")
    conn.commit()
    pending = conn.execute("SELECT row_key, stage FROM pgdedup.pending WHERE collection = 'docs'").fetchall()
    assert pending == [("8000", "queued")]
    pgdedup.index("docs", dsn=dsn, progress=False)
    pending = conn.execute("SELECT row_key, stage FROM pgdedup.pending WHERE collection = 'docs'").fetchall()
    assert pending == [("8000", "indexed")]
    assert pgdedup.status("docs", dsn=dsn)[0]["pending"] == 1
    result = pgdedup.dedupe("docs", dsn=dsn)
    assert result.kind == "incremental"
    assert conn.execute("SELECT count(*) FROM pgdedup.pending").fetchone()[0] == 0
    assert pgdedup.dedupe("docs", full=True, dsn=dsn).kind == "full"


def test_an_incremental_run_reexamines_what_changed_not_the_table(conn, dsn):
    """1,000 unrelated rows and one family; one new near-copy: a handful of rows re-examined."""
    rng = random.Random(3)
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text, published_at int)")
    with conn.cursor().copy("COPY docs FROM STDIN") as copy:
        for i in range(1, 1001):
            copy.write_row((i, " ".join(f"u{rng.randrange(10**6)}" for _ in range(families.WORDS)), 0))
        for i in range(1001, 1004):
            copy.write_row((i, families.text(rng, 0, 1), i))
    pgdedup.index("docs", "id", ["body"], params=PARAMS, dsn=dsn, progress=False)
    by_estimate = {"keep_order": "published_at, id", "verify": "estimate", "dsn": dsn}
    assert pgdedup.dedupe("docs", **by_estimate).kind == "full"
    conn.execute("INSERT INTO docs VALUES (2000, %s, 0)", (families.text(rng, 0, 1),))  # sorts first: the new keeper
    pgdedup.index("docs", dsn=dsn, progress=False)
    result = pgdedup.dedupe("docs", **by_estimate)
    # the new row, and the one family row after it in keep order that it has an edge to (the
    # other family rows only share buckets with it, below the threshold): not the 1,000 others
    assert result.kind == "incremental" and result.rows_examined == 2
    assert "deduped docs (incremental): 2 rows re-examined" in result.summary()
    incremental = _marks_column(conn)
    assert incremental[2000] is None and 2000 in incremental.values()  # the new row sorts first: kept
    assert pgdedup.dedupe("docs", full=True, **by_estimate).rows_examined == 1004
    assert _marks_column(conn) == incremental


def _docs_of(conn, bodies: list[str]) -> None:
    """Table docs (id, body, published_at) holding ``bodies`` as rows 1, 2, ..., all published at 0."""
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text, published_at int)")
    with conn.cursor().copy("COPY docs FROM STDIN") as copy:
        for i, body in enumerate(bodies, 1):
            copy.write_row((i, body, 0))


def test_a_new_row_in_a_capped_bucket_meets_the_leaders_not_the_bucket(conn, dsn):
    """40 near-copies of one story share buckets capped at 5 texts. A new copy, last in keep
    order, has edges only to the leaders, which come before it: it is the one row re-examined
    (revision 6 re-examined every member of its buckets). Then a leader deleted and a middle row
    edited, each checked against a fresh full run."""
    rng = random.Random(5)
    _docs_of(conn, [families.text(rng, 0, 1) for _ in range(40)])
    pgdedup.index("docs", "id", ["body"], params=PARAMS, dsn=dsn, progress=False)
    assert pgdedup.dedupe("docs", keep_order="id", max_bucket=5, dsn=dsn).kind == "full"
    capped = conn.execute("SELECT count(DISTINCT (band, bucket)) FROM pgdedup.leaders").fetchone()[0]
    assert capped > 0, "the story's buckets hold more than 5 texts"
    conn.execute("INSERT INTO docs VALUES (100, %s, 0)", (families.text(rng, 0, 1),))
    conn.commit()
    pgdedup.index("docs", dsn=dsn, progress=False)
    result = pgdedup.dedupe("docs", keep_order="id", max_bucket=5, dsn=dsn)
    assert (result.kind, result.rows_examined) == ("incremental", 1)
    assert _marks_column(conn) == _marks_fresh(conn, dsn, "id", 5)
    for change in ("DELETE FROM docs WHERE id = 2", "UPDATE docs SET body = body || ' extra words' WHERE id = 20"):
        conn.execute(change)
        conn.commit()
        pgdedup.index("docs", dsn=dsn, progress=False)
        assert pgdedup.dedupe("docs", keep_order="id", max_bucket=5, dsn=dsn).kind == "incremental"
        assert _marks_column(conn) == _marks_fresh(conn, dsn, "id", 5)


#: The story of ``_short_copies_with_a_new_one`` with a word added: a near-duplicate of its
#: copies (Jaccard 22/23) that auto checks exactly.
NEAR_COPY = families.text(random.Random(0), 0, 0) + " added"


def _short_copies_with_a_new_one(conn, dsn, new_body: str | None = None) -> None:
    """40 near-copies of one short story (fewer features than positions: auto checks every pair
    of them exactly) in buckets capped at 5 texts, deduped in full; then row 100, ``new_body``
    (default: one more copy with two words replaced), indexed."""
    rng = random.Random(11)
    _docs_of(conn, [families.text(rng, 0, rng.randrange(3)) for _ in range(40)])
    pgdedup.index("docs", "id", ["body"], params=PARAMS, dsn=dsn, progress=False)
    assert pgdedup.dedupe("docs", keep_order="id", max_bucket=5, dsn=dsn).kind == "full"
    assert conn.execute("SELECT count(*) FROM pgdedup.leaders").fetchone()[0] > 0, "capped buckets"
    conn.execute("INSERT INTO docs VALUES (100, %s, 0)", (new_body or families.text(rng, 0, 2),))
    conn.commit()
    pgdedup.index("docs", dsn=dsn, progress=False)


def test_an_incremental_auto_run_goes_on_from_the_step_that_needed_checks(conn, dsn, capfd):
    """A new copy meets ambiguous pairs without a check (with the capped buckets' leaders): the
    decision stops at that closure step, the pairs are checked, and the next call goes on from
    that step (revision 39) instead of setting up the region again. The marks equal a fresh
    full run's."""
    _short_copies_with_a_new_one(conn, dsn)
    capfd.readouterr()
    result = pgdedup.dedupe("docs", keep_order="id", max_bucket=5, dsn=dsn, progress=True)
    stages = capfd.readouterr().err
    assert re.search(r"\d+ ambiguous pairs checked exactly", stages), stages
    assert len(re.findall(r"texts to start from", stages)) == 1, stages
    assert re.search(r"going on from closure step 1\b", stages), stages
    assert result.kind == "incremental"
    assert _marks_column(conn) == _marks_fresh(conn, dsn, "id", 5)


def _auto_call(full: bool) -> str:
    """A direct SQL call of the auto decision on ``docs`` (marks in place, keep order id, cap 5),
    as ``pgdedup.dedupe`` makes it; it returns the kind."""
    return ("SELECT kind FROM pgdedup.update_duplicates('docs', true, NULL, 'id', 'duplicate_of', 5, "
            f"{str(full).lower()}, 'auto')")


@pytest.mark.parametrize("meddle", [
    "CREATE TEMP TABLE pgdedup_emptied ON COMMIT DROP AS SELECT * FROM pg_temp.pgdedup_step_pairs LIMIT 0; "
    "DROP TABLE pg_temp.pgdedup_step_pairs; ALTER TABLE pg_temp.pgdedup_emptied RENAME TO pgdedup_step_pairs",
    "DELETE FROM pg_temp.pgdedup_step_pairs",
    "TRUNCATE pg_temp.pgdedup_step_pairs",
    "INSERT INTO pg_temp.pgdedup_edges SELECT a.text_hash, b.text_hash, 1.0 FROM pgdedup.signatures a "
    "JOIN pgdedup.signatures b ON b.collection_id = a.collection_id AND b.row_key = '2' WHERE a.row_key = '100'",
])
def test_a_decision_does_not_go_on_from_tables_changed_since_it_stopped(conn, dsn, meddle):
    """A direct SQL caller whose decision stopped for checks, and who then changes one of the
    tables it left before calling again (here: puts an empty table in place of the step's
    candidate pairs, empties it in place, or adds an edge), gets a decision made afresh
    (closure_state no longer matches: relation ids, rows written in this transaction, edges),
    so the marks still equal a fresh full run's (with the check of the tables removed, every
    case marks the new row wrongly)."""
    _short_copies_with_a_new_one(conn, dsn, new_body=NEAR_COPY)
    call = _auto_call(full=False)
    notices: list[str] = []
    conn.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    coll = pgdedup.collections.get(conn, "docs")
    with conn.transaction():  # (the test's connection is in autocommit)
        conn.execute("SELECT pg_catalog.set_config('pgdedup.progress', 'on', true)")
        assert conn.execute(call).fetchone()[0] == "unchecked"
        conn.execute(meddle)
        while True:
            store_checks(conn, coll, psycopg.sql.SQL("SELECT * FROM pg_temp.pgdedup_unchecked"))
            if (kind := conn.execute(call).fetchone()[0]) != "unchecked":
                break
    assert kind == "incremental"
    marks = _marks_column(conn)
    assert marks[100] is not None, "the new copy is a near-duplicate"
    assert marks == _marks_fresh(conn, dsn, "id", 5)
    assert not any("going on from" in n for n in notices), notices
    assert sum("texts to start from" in n for n in notices) == 2, notices


CLOSURE = ("redone", "lost", "touched", "members", "leaders", "was", "moved", "seeds", "region", "frontier",
           "edges", "step_pairs", "resume")
ESTIMATES = ("estimated", "estimated_for", "shared", "rows", "rank", "ranked_for")


def _plant(conn, call: str, tables: tuple[str, ...], tamper: str) -> None:
    """What a role sharing the session (a pool, SET ROLE) could leave for the next transaction:
    the tables an auto run keeps between its calls, made by ``call`` (which stops for checks),
    copied to tables that outlive the transaction under their names, then ``tamper``ed, with
    every marker redone to match them."""
    with conn.transaction():
        assert conn.execute(call).fetchone()[0] == "unchecked"
        for t in tables:
            conn.execute(f"CREATE TEMP TABLE planted_{t} AS SELECT * FROM pg_temp.pgdedup_{t}")
    with conn.transaction():
        for t in tables:
            conn.execute(f"ALTER TABLE pg_temp.planted_{t} RENAME TO pgdedup_{t}")
        conn.execute(tamper)
        if "resume" in tables:
            conn.execute("UPDATE pg_temp.pgdedup_resume SET state = pgdedup.closure_state()")
        if "ranked_for" in tables:
            conn.execute("UPDATE pg_temp.pgdedup_ranked_for SET rows_table = 'pg_temp.pgdedup_rows'::regclass, "
                         "rank_table = 'pg_temp.pgdedup_rank'::regclass")


@pytest.mark.parametrize("full", [False, True])
def test_a_dedupe_never_reuses_state_an_earlier_transaction_left(conn, dsn, full):
    """Tables and markers of the state an auto run keeps between its calls (an incremental
    run's closure; a full run's estimates and ranks), planted by an earlier transaction of the
    same session to match every other check, with the new row's candidate pairs removed, are
    not reused by a later dedupe on that session: each marker records its transaction's start
    (revision 40). The marks equal a fresh full run's; with the start not checked, the planted
    state leaves the new row unmarked."""
    _short_copies_with_a_new_one(conn, dsn, new_body=NEAR_COPY)
    _plant(conn, _auto_call(full),
           ESTIMATES if full else CLOSURE,
           "DELETE FROM pg_temp.pgdedup_estimated" if full else "DELETE FROM pg_temp.pgdedup_step_pairs")
    with conn.transaction():
        result = pgdedup.dedupe("docs", keep_order="id", max_bucket=5, full=full, dsn=conn)
    assert result.kind == ("full" if full else "incremental")
    marks = _marks_column(conn)
    assert marks[100] is not None, "the new copy is a near-duplicate"
    assert marks == _marks_fresh(conn, dsn, "id", 5)


def test_a_full_run_leaves_statistics_for_the_next_incremental_one(conn, dsn):
    """A full dedupe on pgdedup's own connection ANALYZEs the tables it filled (exact checks,
    leaders, marks), so the next, incremental run is planned on statistics rather than none (at
    a million rows 6.8-7.0 s without them, 2.1 s with). Autovacuum is off on those tables here:
    only pgdedup can have analyzed them."""
    rng = random.Random(3)
    _docs_of(conn, [families.text(rng, 0, rng.randrange(3)) for _ in range(40)])
    pgdedup.migrate(dsn)
    tables = ("pgdedup.checked", "pgdedup.leaders", "pgdedup.duplicates")
    for table in tables:
        conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")

    def rows_estimated() -> list[int]:
        return conn.execute("SELECT array_agg(c.reltuples::bigint ORDER BY t.n) FROM unnest(%s::regclass[]) "
                            "WITH ORDINALITY t(r, n) JOIN pg_class c ON c.oid = t.r", (list(tables),)).fetchone()[0]

    pgdedup.index("docs", "id", ["body"], params=PARAMS, dsn=dsn, progress=False)
    assert rows_estimated() == [-1, -1, -1], "never analyzed"
    assert pgdedup.dedupe("docs", keep_order="id", max_bucket=5, dsn=dsn).kind == "full"
    counts = rows_estimated()
    assert all(n > 0 for n in counts), counts


@pytest.mark.parametrize("as_error", [False, True])
def test_a_full_run_does_not_wait_long_for_its_statistics(conn, dsn, as_error):
    """The ANALYZE after a full run is best effort: with another session holding one of the
    tables against it (as a VACUUM would), the run still ends, marks committed, in about its lock
    timeout, and leaves that table's statistics to autovacuum, saying so; the others are
    analyzed, also when the caller's warning filter makes the warning an error."""
    _docs_of(conn, [families.text(random.Random(1), 0, 0)] * 20)
    pgdedup.index("docs", "id", ["body"], params=PARAMS, dsn=dsn, progress=False)
    with psycopg.connect(dsn) as holder:
        holder.execute("LOCK TABLE pgdedup.leaders IN SHARE UPDATE EXCLUSIVE MODE")
        started = time.monotonic()
        with warnings.catch_warnings(record=True) as told:
            warnings.simplefilter("error" if as_error else "always", pgdedup.StatisticsWarning)
            result = pgdedup.dedupe("docs", keep_order="id", dsn=dsn)
        waited = time.monotonic() - started
    assert [str(w.message) for w in told if w.category is pgdedup.StatisticsWarning] == (
        [] if as_error else ["pgdedup.leaders not analyzed: another session held it for 3s; its statistics stay as "
                             "they were"])
    assert conn.execute("SELECT count(*) FROM pg_stats WHERE schemaname = 'pgdedup' AND tablename = 'duplicates'"
                        ).fetchone()[0] > 0
    assert (result.kind, result.duplicates) == ("full", 19)
    assert waited < 10, waited
    assert conn.execute("SELECT count(*) FROM docs WHERE duplicate_of IS NOT NULL").fetchone()[0] == 19


def test_fifty_thousand_rows_in_one_statement(conn, dsn, docs):
    pgdedup.track("docs", dsn=dsn)
    pgdedup.index("docs", dsn=dsn, progress=False)
    pgdedup.dedupe("docs", keep_order="published_at, id", dsn=dsn)
    conn.execute("INSERT INTO docs SELECT 10000 + i, concat_ws(' ', md5(i || 'a'), md5(i || 'b'), md5(i || 'c'), "
                 "md5(i || 'd'), md5(i || 'e'), md5(i || 'f')), i % 5 FROM generate_series(1, 50000) i")
    conn.execute("UPDATE docs SET body = (SELECT body FROM docs WHERE id = 10001) WHERE id IN (10002, 10003)")
    assert conn.execute("SELECT count(*) FROM pgdedup.queue").fetchone()[0] == 50002
    result = pgdedup.index("docs", dsn=dsn, progress=False)
    assert (result.queued, result.signed, result.removed) == (50002, 50000, 0)
    after = pgdedup.dedupe("docs", keep_order="published_at, id", dsn=dsn)
    assert after.kind == "full"  # 50,002 changes: more than 1/25 of the rows, and than 1,000
    marks = _marks_column(conn)
    assert pgdedup.dedupe("docs", keep_order="published_at, id", full=True, dsn=dsn).duplicates == after.duplicates
    assert _marks_column(conn) == marks


@pytest.mark.parametrize("how", ["rename", "drop"])
def test_a_tracked_source_renamed_or_dropped(conn, dsn, docs, how):
    pgdedup.track("docs", dsn=dsn)
    pgdedup.index("docs", dsn=dsn, progress=False)
    conn.execute("CREATE TABLE other (id int PRIMARY KEY, body text)")  # untouched bystander
    conn.execute("ALTER TABLE docs RENAME TO docs_v2" if how == "rename" else "DROP TABLE docs")
    if how == "rename":  # the app keeps writing the renamed table: its statements never fail
        conn.execute("INSERT INTO docs_v2 VALUES (9000, 'still writable', 1)")
        conn.execute("UPDATE docs_v2 SET body = 'edited' WHERE id = 9000")
    assert pgdedup.status("docs", dsn=dsn)[0]["source_missing"] is True
    one_line_error(cli("index", "docs", "--dsn", dsn), "source table public.docs of collection 'docs' does not exist")
    one_line_error(cli("watch", "docs", "--dsn", dsn, timeout=60), "does not exist", "pgdedup drop docs")
    assert pgdedup.drop("docs", dsn=dsn) > 0
    if how == "rename":
        assert conn.execute("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'docs_v2'::regclass").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM pgdedup.queue").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM other").fetchone()[0] == 0


_SAME = " ".join(f"word{i}" for i in range(40))

#: (table, its rows (id, body, pub), the DDL that reorders them without a write): in each, row 1
#: comes first before the DDL and row 2 after it.
_REORDERED = {
    "type": ("CREATE TABLE docs (id text PRIMARY KEY, body text, pub integer)",
             [("1", _SAME, 9), ("2", _SAME + " again", 10)],
             "ALTER TABLE docs ALTER COLUMN pub TYPE text"),  # 9 < 10; '10' < '9'
    "collation": ("CREATE TABLE docs (id text PRIMARY KEY, body text, pub text COLLATE \"C\")",
                  [("1", _SAME, "B"), ("2", _SAME + " again", "a")],
                  'ALTER TABLE docs ALTER COLUMN pub TYPE text COLLATE "und-x-icu"'),  # 'B' < 'a'; 'a' < 'B'
    "key collation": ("CREATE TABLE docs (id text COLLATE \"C\" PRIMARY KEY, body text, pub text)",
                      [("B", _SAME, "tie"), ("a", _SAME + " again", "tie")],  # the key breaks the tie
                      'ALTER TABLE docs ALTER COLUMN id TYPE text COLLATE "und-x-icu"'),
}


@pytest.mark.parametrize("change", sorted(_REORDERED))
def test_a_keep_order_changed_by_ddl_is_decided_in_full(conn, dsn, change):
    """A keep-order column's type or collation, or the key's collation (which breaks ties),
    changed by ALTER TABLE: every row's place in the keep order may move, and no trigger sees
    it. The next dedupe ran incrementally and kept the old order's marks; since revision 54 the
    keep order names its columns' types and collations, so the run is a full one."""
    create, rows, ddl = _REORDERED[change]
    if "und-x-icu" in ddl and conn.execute("SELECT to_regcollation('\"und-x-icu\"')").fetchone()[0] is None:
        pytest.skip("this server has no ICU collations")
    conn.execute(create)
    conn.cursor().executemany("INSERT INTO docs VALUES (%s, %s, %s)", rows)
    pgdedup.index("docs", "id", ["body"], params=PARAMS, dsn=dsn, progress=False)
    pgdedup.track("docs", dsn=dsn)
    pgdedup.index("docs", dsn=dsn, progress=False)
    first, second = rows[0][0], rows[1][0]
    assert pgdedup.dedupe("docs", keep_order="pub", dsn=dsn).duplicates == 1
    assert dict(conn.execute("SELECT id, duplicate_of FROM docs")) == {first: None, second: first}
    conn.execute(ddl)
    conn.execute("INSERT INTO docs VALUES ('zz', 'one more row, unrelated, so that something is queued', '0')")
    pgdedup.index("docs", dsn=dsn, progress=False)
    assert pgdedup.dedupe("docs", keep_order="pub", dsn=dsn).kind == "full"
    assert dict(conn.execute("SELECT id, duplicate_of FROM docs")) == {first: second, second: None, "zz": None}


def test_marking_gives_the_caller_its_own_pgdedup_marking_back(conn, dsn, docs):
    """A role may keep its own writes out of the tracking queue with ``SET LOCAL pgdedup.marking
    = on``; pgdedup's marking (and unmark) set it off afterwards, so the rest of that role's
    transaction was queued. Since revision 53 they put back what the caller had."""
    pgdedup.dedupe("docs", keep_order="published_at, id", dsn=dsn)
    pgdedup.track("docs", dsn=dsn)
    pgdedup.index("docs", dsn=dsn, progress=False)  # the catch-up run empties the queue
    assert _queue(conn) == []
    ids = [r[0] for r in conn.execute("SELECT id FROM docs ORDER BY id LIMIT 2")]
    with psycopg.connect(dsn) as app:
        for call in ("SELECT count(*) FROM pgdedup.mark_duplicates('docs', p_keep_order => 'published_at, id')",
                     "SELECT pgdedup.unmark('docs')"):
            app.execute("SET LOCAL pgdedup.marking = on")
            app.execute(call)
            assert app.execute("SELECT current_setting('pgdedup.marking')").fetchone()[0] == "on"
            app.execute("UPDATE docs SET body = body || ' (edited)' WHERE id = %s", (ids.pop(),))
            app.commit()
    assert _queue(conn) == []


def test_track_waits_for_the_table_at_most_lock_timeout(conn, dsn, docs):
    """CREATE TRIGGER needs the table briefly; behind a writer's open transaction, track gives up
    after lock_timeout (5 s when the session sets none) instead of queueing every later query."""
    writer = psycopg.connect(dsn)
    writer.execute("INSERT INTO docs VALUES (6000, 'an open transaction', 1)")
    try:
        started = time.monotonic()
        with pytest.raises(pgdedup.CollectionBusy, match="could not lock public.docs"):
            pgdedup.track("docs", dsn=dsn)
        assert 4 < time.monotonic() - started < 30
        # the CLI's line names the table and the holder (it was PostgreSQL's bare "canceling
        # statement due to lock timeout")
        one_line_error(cli("track", "docs", "--dsn", dsn, timeout=60),
                       "could not lock public.docs to add the tracking triggers of collection 'docs' in time (lock_timeout): pid",
                       f"pid {writer.info.backend_pid} ")
    finally:
        writer.close()
    assert pgdedup.status("docs", dsn=dsn)[0]["tracked"] is False


def test_kill_9_of_an_index_from_the_queue_loses_nothing(conn, dsn, docs):
    """SIGKILL mid-run: the chunks done are committed with their queue entries deleted, the rest
    stay queued; the rerun finishes, and a full comparison afterwards finds nothing to sign."""
    pgdedup.track("docs", dsn=dsn)
    pgdedup.index("docs", dsn=dsn, progress=False)
    conn.execute("INSERT INTO docs SELECT 20000 + i, concat_ws(' ', md5(i || 'a'), md5(i || 'b'), md5(i || 'c')), 1 "
                 "FROM generate_series(1, 30000) i")
    run = cli_background("index", "docs", "--chunk-size", "500", "--no-progress", "--dsn", dsn)
    deadline = time.monotonic() + 60
    while conn.execute("SELECT count(*) FROM pgdedup.queue").fetchone()[0] > 25000 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait(timeout=30)
    left = conn.execute("SELECT count(*) FROM pgdedup.queue").fetchone()[0]
    assert 0 < left < 30000, "killed mid-run, with work done and work left"
    signed = conn.execute("SELECT count(*) FROM pgdedup.signatures WHERE row_key::int > 20000").fetchone()[0]
    assert signed + left == 30000, "every key is either signed or still queued"
    rerun = pgdedup.index("docs", dsn=dsn, progress=False)
    assert rerun.queued == left and conn.execute("SELECT count(*) FROM pgdedup.queue").fetchone()[0] == 0
    full = pgdedup.index("docs", full=True, dsn=dsn, progress=False)
    assert (full.signed, full.removed) == (0, 0)


def test_counts_and_stored_marks_of_the_view_target_follow_each_way_of_storing(conn, dsn):
    """The view target (alter=False): counts recounted when unknown (as after an upgrade from
    revision 33), then adjusted by incremental runs that add a group, grow one and remove one;
    then a full run over the stored result in which a mark keeps its kept row but not its
    similarity. Counts against the view's own marks; stored rows against a fresh collection's."""
    base = [f"f0w{i}" for i in range(40)]

    def edited(*positions: int) -> str:
        return " ".join(f"x{i}" if i in positions else w for i, w in enumerate(base))

    other = [" ".join(f"f{f}w{i}" for i in range(40)) for f in (1, 2)]
    _docs_of(conn, [" ".join(base), edited(39), other[0], other[0] + " tail", other[1]])
    conn.commit()
    pgdedup.index("docs", "id", ["body"], params=PARAMS, dsn=dsn, progress=False)
    kw = {"alter": False, "keep_order": "published_at, id", "verify": "estimate", "dsn": dsn}
    assert pgdedup.dedupe("docs", **kw).kind == "full"
    in_view = "SELECT count(duplicate_of), count(DISTINCT duplicate_of) FROM pgdedup.docs_duplicates"
    conn.execute("UPDATE pgdedup.results SET duplicates = NULL, groups = NULL WHERE target = 'view'")
    conn.commit()
    for change, args in (("INSERT INTO docs VALUES (6, %s, 0), (7, %s, 0)", (edited(0), other[1] + " more")),
                         ("DELETE FROM docs WHERE id = 4", ())):
        conn.execute(change, args)
        conn.commit()
        pgdedup.index("docs", dsn=dsn, progress=False)
        result = pgdedup.dedupe("docs", **kw)
        assert result.kind == "incremental"
        counts = conn.execute(in_view).fetchone()
        assert (result.duplicates, result.groups) == counts
        assert conn.execute("SELECT duplicates, groups FROM pgdedup.results WHERE target = 'view'").fetchone() == counts
        conn.commit()
    before = {r[0]: r[1:] for r in _stored_marks(conn, "docs", "view")}
    conn.execute("UPDATE docs SET body = %s WHERE id = 2", (edited(30, 39),))
    conn.commit()
    pgdedup.index("docs", dsn=dsn, progress=False)
    full = pgdedup.dedupe("docs", full=True, **kw)
    after = {r[0]: r[1:] for r in _stored_marks(conn, "docs", "view")}
    assert after["2"][0] == before["2"][0] and after["2"][1] != before["2"][1]  # the case this test is for
    assert (full.duplicates, full.groups) == conn.execute(in_view).fetchone()
    _marks_fresh(conn, dsn, "published_at, id", 100, "estimate")
    assert _stored_marks(conn, "docs", "view") == _stored_marks(conn, "fresh", "view")
    conn.commit()


def test_a_large_batch_of_changes_is_decided_in_full(conn, dsn):
    """More logged changes than 1/25 of the rows indexed and than 1,000: the dedupe runs in full,
    which gives the marks an incremental run would (the property above) at a fraction of its
    cost; fewer: incremental. The marks are those of a fresh collection either way."""
    rng = random.Random(5)
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text, published_at int)")
    with conn.cursor().copy("COPY docs FROM STDIN") as copy:
        for i in range(1, 5001):
            body = (families.text(rng, i % families.FAMILIES, rng.randrange(4)) if i % 10 == 0
                    else " ".join(f"u{rng.randrange(10**6)}" for _ in range(families.WORDS)))
            copy.write_row((i, body, rng.randrange(10)))
    conn.commit()
    pgdedup.index("docs", "id", ["body"], params=PARAMS, dsn=dsn, progress=False)
    by_estimate = {"keep_order": "published_at, id", "verify": "estimate", "dsn": dsn}
    assert pgdedup.dedupe("docs", **by_estimate).kind == "full"

    def edit(rows: int) -> str:
        conn.execute("UPDATE docs SET body = body || ' edited' WHERE id IN "
                     "(SELECT id FROM docs ORDER BY md5(id::text || %s) LIMIT %s)", (str(rows), rows))
        conn.commit()
        pgdedup.index("docs", dsn=dsn, progress=False)
        kind = pgdedup.dedupe("docs", **by_estimate).kind
        assert _marks_column(conn) == _marks_fresh(conn, dsn, "published_at, id", 100, "estimate")
        return kind

    assert edit(900) == "incremental"  # 900 changes: fewer than 1,000
    assert edit(1100) == "full"  # more than 1,000 and than 5,000 / 25
