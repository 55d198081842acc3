"""Results that belong to their index and their target; drop and unmark (issue: correctness).

- ``--verify exact`` must see the candidates the estimate path sees (keep-order leaders of a
  capped bucket), for ``dedupe`` and for ``pairs``;
- results computed from an older index are flagged (status) or refused (PD004), never read;
- the in-place column and the non-invasive view each keep their own result, in any order;
- ``drop`` forgets everything pgdedup stored and nothing else; ``unmark`` clears the column.
"""

from __future__ import annotations

import hashlib
import time

import psycopg
import pytest

import pgdedup

from clirun import cli, cli_background, one_line_error
from crashes import wait_for
from planted import create, make_rows
from reference import ref_jaccard, ref_word_shingles

BASE_WORDS = 95  # 91 shared 5-grams
TAIL_WORDS = 7   # 7 unique 5-grams per copy: every pair's Jaccard is 91 / (91 + 14) = 0.8667


def _near_copies(n: int) -> list[tuple[int, str]]:
    """``n`` texts that share a 95-word body and each end with 7 words of their own."""
    base = [f"b{i}" for i in range(BASE_WORDS)]
    return [(i, " ".join(base + [f"t{i}x{j}" for j in range(TAIL_WORDS)])) for i in range(1, n + 1)]


@pytest.fixture
def copies(conn, dsn):
    rows = _near_copies(400)
    conn.execute("CREATE TABLE t (id bigint PRIMARY KEY, body text)")
    with conn.cursor().copy("COPY t (id, body) FROM STDIN") as copy:
        for r in rows:
            copy.write_row(r)
    pgdedup.index("t", "id", ["body"], dsn=dsn, progress=False)
    return rows


def test_every_pair_of_the_copies_has_jaccard_0_867(copies):
    """The premise, from the reference shingler: the exact answer is "399 duplicates of one row"."""
    sets = [ref_word_shingles(body) for _, body in copies[:30]]
    assert {round(ref_jaccard(a, b), 4) for i, a in enumerate(sets) for b in sets[i + 1:]} == {0.8667}


def _marks(conn, column: str = "duplicate_of") -> dict[int, int]:
    return dict(conn.execute(f"SELECT id, {column} FROM t WHERE {column} IS NOT NULL").fetchall())


def test_exact_verification_of_a_capped_bucket_keeps_the_keep_order_leaders(conn, dsn, copies):
    # Every candidate pair is truly similar (0.867 ≥ 0.8), so exact verification can only add
    # marks to the estimate's: it must see the same candidates (the leaders in keep order).
    estimate = pgdedup.dedupe("t", max_bucket=10, keep_order="id desc", dsn=dsn)
    by_estimate = _marks(conn)
    exact = pgdedup.dedupe("t", max_bucket=10, keep_order="id desc", verify="exact", dsn=dsn)
    by_exact = _marks(conn)
    assert set(by_exact.values()) == {400}, "every duplicate points at the first row in keep order"
    assert set(by_estimate) <= set(by_exact)
    assert exact.duplicates == len(by_exact) >= estimate.duplicates >= 350
    assert exact.groups == 1


def test_exact_pairs_of_a_capped_bucket_match_the_estimate_candidates(conn, dsn, copies):
    estimate = {(a, b) for a, b, _ in pgdedup.pairs("t", max_bucket=10, dsn=dsn)}
    exact = {(a, b): s for a, b, s in pgdedup.pairs("t", max_bucket=10, verify="exact", dsn=dsn)}
    assert estimate <= set(exact)
    assert {round(s, 4) for s in exact.values()} == {0.8667}
    # the cap really bounds the pairs: each of 16 bands pairs a row with ≤ 10 leaders of its bucket
    assert len(exact) <= 16 * 400 * 10 < 400 * 399 // 2


def test_pairs_max_bucket_is_an_option(dsn, copies):
    few = cli("pairs", "t", "--max-bucket", "5", "--dsn", dsn)
    more = cli("pairs", "t", "--max-bucket", "50", "--dsn", dsn)
    assert few.returncode == more.returncode == 0, (few.stderr, more.stderr)
    assert len(few.stdout.splitlines()) < len(more.stdout.splitlines())
    one_line_error(cli("pairs", "t", "--max-bucket", "0", "--dsn", dsn), "max_bucket")


# stale results ----------------------------------------------------------------------------------

@pytest.fixture
def items(conn, dsn):
    rows, groups, originals = make_rows("bigint", groups=6, copies=2, unrelated=20)
    create(conn, "items", "bigint", rows)
    pgdedup.index("items", "id", ["title", "body"], dsn=dsn, progress=False)
    return rows, groups, originals


def _status(dsn: str, name: str = "items") -> dict:
    return pgdedup.status(name, dsn=dsn)[0]


def test_results_of_an_older_index_are_flagged_and_exact_pairs_refused(conn, dsn, items):
    pgdedup.dedupe("items", alter=False, dsn=dsn)
    list(pgdedup.pairs("items", verify="exact", dsn=dsn))
    assert _status(dsn)["stale"] == [] and _status(dsn)["duplicates"] == 12
    exact_sql = "SELECT count(*) FROM pgdedup.pairs('items', p_verify => 'exact')"
    assert one_value(conn, exact_sql) == 6 * 3  # current: readable in psql (6 groups of 3: 3 pairs each)

    # a text edit moves a row out of its group: the stored results describe the old index
    rows, groups, _ = items
    conn.execute("UPDATE items SET body = 'something else entirely' WHERE id = %s", (groups[0][-1],))
    conn.commit()
    pgdedup.index("items", "id", ["title", "body"], dsn=dsn, progress=False)
    assert _status(dsn)["stale"] == ["exact", "view"]
    assert "STALE results (exact, view)" in cli("status", "items", "--dsn", dsn).stdout
    with pytest.raises(psycopg.Error) as info:
        conn.execute(exact_sql)
    assert info.value.sqlstate == "PD004" and "pgdedup pairs items --verify exact" in str(info.value)
    conn.rollback()
    with pytest.raises(psycopg.Error) as info:  # dedupe's exact pairs were never computed
        conn.execute("SELECT * FROM pgdedup.find_duplicates('items', p_verify => 'exact')")
    assert info.value.sqlstate == "PD004" and "pgdedup dedupe items --verify exact" in str(info.value)
    conn.rollback()

    pgdedup.dedupe("items", alter=False, dsn=dsn)
    assert _status(dsn)["stale"] == ["exact"] and _status(dsn)["duplicates"] == 11


def test_reindex_clears_results(conn, dsn, items):
    pgdedup.dedupe("items", alter=False, dsn=dsn)
    pgdedup.dedupe("items", dsn=dsn)
    pgdedup.index("items", "id", ["title", "body"], params=pgdedup.Params(ngram=3), reindex=True, dsn=dsn,
                  progress=False)
    st = _status(dsn)
    assert st["duplicates"] == 0 and st["marked"] == 0 and st["stale"] == []
    assert conn.execute("SELECT count(*) FROM pgdedup.exact_pairs").fetchone()[0] == 0


# both targets, in any order ------------------------------------------------------------------------

def _column_count(conn) -> int:
    return conn.execute("SELECT count(duplicate_of) FROM items").fetchone()[0]


@pytest.mark.parametrize("first", ["column", "view"])
def test_in_place_and_non_invasive_results_coexist(conn, dsn, items, first):
    in_place = lambda: pgdedup.dedupe("items", dsn=dsn)  # noqa: E731
    strict_view = lambda: pgdedup.dedupe("items", alter=False, threshold=0.95, dsn=dsn)  # noqa: E731
    for run in ((in_place, strict_view) if first == "column" else (strict_view, in_place)):
        run()
    st = _status(dsn)
    assert st["marked"] == _column_count(conn) == 12, "the column's result is its own"
    assert st["duplicates"] < 12, "the view's result is its own"
    view_marks = conn.execute("SELECT count(duplicate_of) FROM pgdedup.items_duplicates").fetchone()[0]
    assert view_marks == st["duplicates"]
    assert one_value(conn, "SELECT pgdedup.create_duplicates_view('items')") == "pgdedup.items_duplicates"
    # a find_duplicates in psql never touches what describes the column
    conn.execute("SELECT * FROM pgdedup.find_duplicates('items', p_threshold => 0.99)")
    conn.commit()
    assert _status(dsn)["marked"] == _column_count(conn) == 12


def one_value(conn, sql: str):
    value = conn.execute(sql).fetchone()[0]
    conn.commit()
    return value


# drop and unmark --------------------------------------------------------------------------------

_TABLES = ("signatures", "band_keys", "band_keys_staged", "duplicates", "exact_pairs", "results", "runs")


def _stored(conn, name: str) -> dict[str, int]:
    cid = conn.execute("SELECT collection_id FROM pgdedup.collections WHERE name = %s", (name,)).fetchone()
    cid = cid[0] if cid else -1
    return {t: conn.execute(f"SELECT count(*) FROM pgdedup.{t} WHERE collection_id = %s", (cid,)).fetchone()[0]
            for t in _TABLES}


def _table_digest(conn, columns: str = "id, title, body, published_at") -> str:
    rows = conn.execute(f"SELECT {columns} FROM items ORDER BY id").fetchall()
    return hashlib.sha256(repr(rows).encode()).hexdigest()


def test_drop_forgets_everything_stored_and_nothing_else(conn, dsn, items):
    rows = items[0]
    conn.execute("CREATE TABLE other AS SELECT * FROM items")
    conn.execute("ALTER TABLE other ADD PRIMARY KEY (id)")
    conn.commit()
    pgdedup.index("other", "id", ["body"], dsn=dsn, progress=False)
    pgdedup.dedupe("items", dsn=dsn)
    pgdedup.dedupe("items", alter=False, dsn=dsn)
    list(pgdedup.pairs("items", verify="exact", dsn=dsn))
    before, marks = _table_digest(conn), _column_count(conn)
    other = _stored(conn, "other")
    assert all(_stored(conn, "items")[t] > 0 for t in ("signatures", "band_keys", "duplicates", "results"))

    proc = cli("drop", "items", "--dsn", dsn)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"dropped items: {len(rows)} rows forgotten"
    assert set(_stored(conn, "items").values()) == {0}
    assert _stored(conn, "other") == other
    assert conn.execute("SELECT to_regclass('pgdedup.items_duplicates')").fetchone()[0] is None
    assert _table_digest(conn) == before and _column_count(conn) == marks == 12, "the source is untouched"
    one_line_error(cli("dedupe", "items", "--dsn", dsn), "no collection named 'items'", "other")
    one_line_error(cli("drop", "items", "--dsn", dsn), "no collection named 'items'")


def test_drop_unmark_clears_the_marks_and_keeps_the_column(conn, dsn, items):
    pgdedup.dedupe("items", dsn=dsn)
    before = _table_digest(conn)
    assert pgdedup.drop("items", unmark=True, dsn=dsn) == len(items[0])
    assert _column_count(conn) == 0
    assert "duplicate_of" in [r[0] for r in conn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = 'items'::regclass AND attnum > 0")]
    assert _table_digest(conn) == before


def test_unmark_clears_the_column_and_dedupe_fills_it_again(conn, dsn, items):
    pgdedup.dedupe("items", dsn=dsn)
    pgdedup.dedupe("items", alter=False, dsn=dsn)
    proc = cli("unmark", "items", "--dsn", dsn)
    assert proc.returncode == 0 and proc.stdout.strip() == "unmarked items: 12 marks cleared", proc
    st = _status(dsn)
    assert _column_count(conn) == 0 and st["marked"] == 0 and st["duplicates"] == 12
    assert st["mark_column"] == "duplicate_of", "the column stays recorded, so dedupe may fill it again"
    pgdedup.dedupe("items", dsn=dsn)
    assert _column_count(conn) == 12


def test_unmark_names_a_renamed_marking_column_and_clears_nothing(conn, dsn, items):
    """The marking column renamed and another made under its name: unmark refuses, naming the
    column that holds the marks (it said the new, empty column "holds values pgdedup did not
    write"); the same column renamed back is cleared."""
    pgdedup.dedupe("items", dsn=dsn)
    conn.execute("ALTER TABLE items RENAME COLUMN duplicate_of TO duplicate_of_old")
    for add in (False, True):  # the name left empty, then taken by a new column
        if add:
            conn.execute("ALTER TABLE items ADD COLUMN duplicate_of integer")
        conn.commit()
        before = _table_digest(conn)
        for command in (("unmark", "items"), ("drop", "items", "--unmark")):
            one_line_error(cli(*command, "--dsn", dsn), "public.items.duplicate_of_old", "nothing was changed")
        assert _table_digest(conn) == before
        assert conn.execute("SELECT count(duplicate_of_old) FROM items").fetchone()[0] == 12
    conn.execute("ALTER TABLE items DROP COLUMN duplicate_of")
    conn.execute("ALTER TABLE items RENAME COLUMN duplicate_of_old TO duplicate_of")
    conn.commit()
    assert pgdedup.unmark("items", dsn=dsn) == 12 and _column_count(conn) == 0


def test_drop_and_unmark_in_sql(conn, dsn, items):
    pgdedup.dedupe("items", dsn=dsn)
    assert one_value(conn, "SELECT pgdedup.unmark('items')") == 12
    assert one_value(conn, "SELECT pgdedup.drop_collection('items')") == len(items[0])
    assert set(_stored(conn, "items").values()) == {0}


def test_drop_waits_for_nobody_and_harms_no_running_job(conn, dsn, items):
    """Another session holds the collection (as an index run does): drop fails at once, naming it."""
    holder = psycopg.connect(dsn, application_name="pgdedup index items")
    try:
        holder.execute("SELECT pgdedup.lock_collection(pgdedup.collection_id('items'))")
        one_line_error(cli("drop", "items", "--dsn", dsn, timeout=60), "busy", "pgdedup index items")
        one_line_error(cli("unmark", "items", "--dsn", dsn, timeout=60), "busy")
    finally:
        holder.close()
    assert _stored(conn, "items")["signatures"] == len(items[0])


def test_a_renamed_source_is_reported_and_the_collection_can_be_dropped(conn, dsn, items):
    pgdedup.dedupe("items", dsn=dsn)
    conn.execute("ALTER TABLE items RENAME TO items_v2")
    conn.commit()
    assert _status(dsn)["source_missing"] is True
    assert "SOURCE public.items IS GONE" in cli("status", "--dsn", dsn).stdout
    one_line_error(cli("dedupe", "items", "--dsn", dsn), "public.items", "does not exist", "`pgdedup drop items`")
    # unmark does not clear a table it no longer knows by name, and says where the marks are
    # (before revision 57 it cleared nothing and said "0 marks cleared"; drop --unmark forgot them)
    one_line_error(cli("unmark", "items", "--dsn", dsn), "public.items_v2.duplicate_of", "not cleared")
    with pytest.raises(pgdedup.SourceMissing, match="items_v2"):
        pgdedup.drop("items", unmark=True, dsn=dsn)
    assert _status(dsn)["rows_indexed"] == len(items[0]), "the refused drop forgot nothing"
    assert pgdedup.drop("items", dsn=dsn) == len(items[0])
    assert conn.execute("SELECT count(duplicate_of) FROM items_v2").fetchone()[0] == 12, "the marks stay"


def test_an_index_that_waited_while_its_collection_was_dropped_does_not_make_it_again(conn, dsn, items):
    """index NAME (an existing collection) waits for the table behind an application's lock; a
    drop commits meanwhile: the index made the collection again (a new id, untracked, the old
    marks left in the table), and both commands said they succeeded."""
    holder = psycopg.connect(dsn)
    holder.execute("LOCK TABLE items IN ACCESS EXCLUSIVE MODE")
    run = cli_background("index", "items", "--no-progress", "--dsn", dsn)
    try:
        with psycopg.connect(dsn, autocommit=True) as probe:
            wait_for(probe, "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name LIKE 'pgdedup index%%' "
                            "AND wait_event_type = 'Lock')", run=run)
        assert pgdedup.drop("items", dsn=dsn) == len(items[0])
    finally:
        holder.close()
    _, err = run.communicate(timeout=60)
    assert run.returncode == 1 and "collection 'items' was dropped while this index started" in err, err
    assert conn.execute("SELECT count(*) FROM pgdedup.collections").fetchone()[0] == 0


def test_unmark_behind_a_running_dedupe_fails_at_once(conn, dsn, items):
    """A dedupe writing its marks holds the collection and the table's marks lock: unmark took
    the marks lock first and waited for the whole dedupe, with no time limit."""
    pgdedup.dedupe("items", dsn=dsn)
    holder = psycopg.connect(dsn, application_name="pgdedup dedupe items")
    try:
        holder.execute("SELECT pgdedup.lock_collection(pgdedup.collection_id('items'))")
        holder.execute("SELECT pgdedup.lock_marks('items'::regclass)")
        started = time.monotonic()
        one_line_error(cli("unmark", "items", "--dsn", dsn, timeout=60), "busy", "pgdedup dedupe items")
        assert time.monotonic() - started < 10
    finally:
        holder.close()
    assert _column_count(conn) == 12
