"""Scopes: a collection partitioned by a column (tenants), and a view as a subset of a table.

The oracle for partitions is independent of the salting that implements them: each tenant's
rows, seen through a view of their own and deduped as a collection of their own, must get
exactly the marks the partitioned collection gives them; and no mark may point into another
tenant, though the same stories (exact and near copies) are spread over every tenant.
"""

from __future__ import annotations

import random

import numpy as np
import psycopg
import pytest

import pgdedup
from pgdedup.hashing import partition_salts, salted, text_hash

from clirun import cli, one_line_error

PARAMS = pgdedup.Params(threshold=0.7, ngram=3, num_perm=32, bands=8, rows=2)
TENANTS = ["acme", "globex", "initech", None]
KEEP = "created, id"


def _story(rng: random.Random, family: int) -> str:
    """One of six stories with 0-3 words replaced (Jaccards from 1 down to about 0.6)."""
    words = [f"s{family}w{i}" for i in range(24)]
    for _ in range(rng.randrange(4)):
        words[rng.randrange(24)] = f"x{rng.randrange(30)}"
    return " ".join(words)


def _insert(conn: psycopg.Connection, rng: random.Random, first_id: int, n: int) -> None:
    for i in range(first_id, first_id + n):
        conn.execute("INSERT INTO tickets VALUES (%s, %s, %s, %s)",
                     (i, rng.choice(TENANTS), _story(rng, rng.randrange(6)), rng.randrange(20)))


def _marks(conn: psycopg.Connection) -> dict[int, int | None]:
    return dict(conn.execute("SELECT id, duplicate_of FROM tickets ORDER BY id").fetchall())


def _marks_tenant_by_tenant(conn: psycopg.Connection, dsn: str) -> dict[int, int | None]:
    """The oracle: every tenant's rows through a view of their own, indexed and deduped alone."""
    marks: dict[int, int | None] = {}
    for n, tenant in enumerate(TENANTS):
        view = f"tickets_t{n}"
        conn.execute(f"DROP VIEW IF EXISTS {view}")
        value = "NULL" if tenant is None else f"'{tenant}'"
        conn.execute(f"CREATE VIEW {view} AS SELECT * FROM tickets WHERE tenant IS NOT DISTINCT FROM {value}")
        conn.execute("SELECT pgdedup.drop_collection(name) FROM pgdedup.collections WHERE name = %s", (view,))
        pgdedup.index(view, "id", ["body"], params=PARAMS, dsn=dsn, progress=False)
        pgdedup.dedupe(view, alter=False, keep_order=KEEP, max_bucket=3, dsn=dsn)
        rows = conn.execute(f"SELECT t.id, d.duplicate_of FROM {view} t "
                            f"LEFT JOIN pgdedup.{view}_duplicates d USING (id)").fetchall()
        marks.update(rows)
    return marks


@pytest.fixture
def tickets(conn, dsn):
    rng = random.Random(11)
    conn.execute("CREATE TABLE tickets (id int PRIMARY KEY, tenant text, body text, created int)")
    _insert(conn, rng, 1, 120)
    pgdedup.migrate(dsn)
    return rng


def test_no_mark_crosses_partitions(conn, dsn, tickets):
    proc = cli("index", "tickets", "--key", "id", "--text", "body", "--partition-by", "tenant", "--threshold", "0.7",
               "--ngram", "3", "--num-perm", "32", "--bands", "8", "--rows", "2", "--no-progress", "--dsn", dsn)
    assert proc.returncode == 0, proc.stderr
    pgdedup.dedupe("tickets", keep_order=KEEP, max_bucket=3, dsn=dsn)
    marks = _marks(conn)
    tenant = dict(conn.execute("SELECT id, tenant FROM tickets").fetchall())
    assert sum(m is not None for m in marks.values()) > 20
    assert all(tenant[row] == tenant[kept] for row, kept in marks.items() if kept is not None)
    assert marks == _marks_tenant_by_tenant(conn, dsn)

    # unpartitioned, the same table has marks across tenants: the partition is what keeps them apart
    pgdedup.index("tickets", "id", ["body"], name="everyone", params=PARAMS, dsn=dsn, progress=False)
    pgdedup.dedupe("everyone", alter=False, keep_order=KEEP, max_bucket=3, dsn=dsn)
    crossing = conn.execute("SELECT count(*) FROM pgdedup.everyone_duplicates d JOIN tickets a USING (id) "
                            "JOIN tickets b ON b.id = d.duplicate_of "
                            "WHERE a.tenant IS DISTINCT FROM b.tenant").fetchone()[0]
    assert crossing > 10


def test_tracked_partitions_stay_apart_as_rows_move_and_arrive(conn, dsn, tickets):
    pgdedup.index("tickets", "id", ["body"], params=PARAMS, partition_by="tenant", dsn=dsn, progress=False)
    pgdedup.track("tickets", dsn=dsn)
    pgdedup.index("tickets", dsn=dsn, progress=False)
    assert pgdedup.dedupe("tickets", keep_order=KEEP, max_bucket=3, dsn=dsn).kind == "full"
    rng = tickets
    for batch in range(3):
        _insert(conn, rng, 1000 + 100 * batch, 10)
        for moved in rng.sample(range(1, 121), 5):  # a ticket moved to another tenant, text unchanged
            conn.execute("UPDATE tickets SET tenant = %s WHERE id = %s", (rng.choice(TENANTS), moved))
        pgdedup.index("tickets", dsn=dsn, progress=False)
        assert pgdedup.dedupe("tickets", keep_order=KEEP, max_bucket=3, dsn=dsn).kind == "incremental"
        assert _marks(conn) == _marks_tenant_by_tenant(conn, dsn)


def test_a_newline_in_a_partition_value_cannot_hide_a_move(conn, dsn):
    """A row moved from partition 'a' with text 'b\\nc' to partition 'a\\nb' with text 'c' has
    changed (it belongs with other rows now): index signs it again, and other rows without a
    newline in their value keep the md5 they were stored with (oracle: the partition-salted
    hash of the new text, by hand from hashing.text_hash and salted)."""
    conn.execute("CREATE TABLE notes (id int PRIMARY KEY, feed text, body text)")
    conn.execute("INSERT INTO notes VALUES (1, 'a', E'b\\nc'), (2, 'x', 'plain'), (3, NULL, 'none')")
    pgdedup.index("notes", "id", ["body"], partition_by="feed", dsn=dsn, progress=False)
    conn.execute("UPDATE notes SET feed = E'a\\nb', body = 'c' WHERE id = 1")
    assert pgdedup.index("notes", dsn=dsn, progress=False).signed == 1
    salt = partition_salts(["a\nb"])
    stored = conn.execute("SELECT text_hash FROM pgdedup.signatures WHERE row_key = '1'").fetchone()[0]
    assert stored == int(salted(np.array([text_hash("c")], dtype=np.int64), salt)[0])
    assert pgdedup.index("notes", dsn=dsn, progress=False).signed == 0


def test_checking_a_text_needs_its_partition(conn, dsn, tickets):
    pgdedup.index("tickets", "id", ["body"], params=PARAMS, partition_by="tenant", dsn=dsn, progress=False)
    text = conn.execute("SELECT body FROM tickets WHERE tenant = 'acme' ORDER BY id LIMIT 1").fetchone()[0]
    acme = {r[0] for r in conn.execute("SELECT id::text FROM tickets WHERE tenant = 'acme'")}
    with pgdedup.collection("tickets", dsn) as coll:
        with pytest.raises(pgdedup.InvalidArgument, match="partitioned by 'tenant'"):
            coll.check(text)
        found = coll.check(text, partition="acme", limit=100)
        assert found and {key for key, _ in found} <= acme
        assert coll.check(text, partition="nobody") == []
    proc = cli("similar", "tickets", "--text", text, "--partition", "acme", "--limit", "100", "--json", "--dsn", dsn)
    assert proc.returncode == 0, proc.stderr
    assert '"key"' in proc.stdout
    one_line_error(cli("similar", "tickets", "--text", text, "--dsn", dsn), "partitioned by 'tenant'")
    one_line_error(cli("index", "tickets", "--partition-by", "tenant", "--dsn", dsn), "setting of a new collection")
    one_line_error(cli("index", "tickets", "--key", "id", "--text", "body", "--partition-by", "body", "--name", "x",
                       "--dsn", dsn), "is the key or a text column")
    one_line_error(cli("index", "tickets", "--key", "id", "--text", "body", "--partition-by", "nope", "--name", "x",
                       "--dsn", dsn), "'nope' does not exist")


def test_a_view_is_a_subset_deduped_without_altering(conn, dsn, tickets):
    conn.execute("CREATE VIEW recent AS SELECT * FROM tickets WHERE created >= 10")
    pgdedup.index("recent", "id", ["body"], params=PARAMS, dsn=dsn, progress=False)
    result = pgdedup.dedupe("recent", alter=False, keep_order=KEEP, dsn=dsn)
    assert result.kind == "full" and result.duplicates > 0
    outside = conn.execute("SELECT count(*) FROM pgdedup.recent_duplicates d JOIN tickets t USING (id) "
                           "WHERE t.created < 10 OR d.duplicate_of IN (SELECT id FROM tickets WHERE created < 10)"
                           ).fetchone()[0]
    assert outside == 0
    one_line_error(cli("dedupe", "recent", "--dsn", dsn), "not a table", "--no-alter")
    one_line_error(cli("track", "recent", "--dsn", dsn), "not a table, so it cannot be tracked")
    assert "duplicate_of" not in [r[0] for r in conn.execute(
        "SELECT attname FROM pg_attribute WHERE attrelid = 'tickets'::regclass")]
