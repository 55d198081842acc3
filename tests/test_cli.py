"""The pgdedup command line, run as a user runs it (a subprocess), against a real database."""

from __future__ import annotations

import csv
import io
import json

import pytest

from pgdedup.schema import HEAD

from clirun import cli
from planted import create, make_rows


@pytest.fixture
def items(conn, dsn):
    rows, groups, originals = make_rows("bigint", groups=6, copies=2, unrelated=10)
    create(conn, "items", "bigint", rows)
    proc = cli("index", "items", "--key", "id", "--text", "title", "--text", "body", "--dsn", dsn)
    assert proc.returncode == 0, proc.stderr
    return groups, originals, len(rows)


def test_index_summary_and_dsn_from_environment(conn, dsn, items):
    proc = cli("index", "items", "--key", "id", "--text", "title", "--text", "body", env={"DATABASE_URL": dsn})
    assert proc.returncode == 0, proc.stderr
    n = items[2]
    assert f"indexed items: {n} rows (0 signed, {n} unchanged, 0 removed)" in proc.stdout
    assert "16 bands × 8 rows" in proc.stdout


def test_dedupe_pairs_similar_status(conn, dsn, items):
    groups, originals, n = items
    proc = cli("dedupe", "items", "--keep-order", "published_at, id", "--dsn", dsn)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"deduped items: {n} rows examined, ")
    assert "marked in public.items.duplicate_of" in proc.stdout

    proc = cli("pairs", "items", "--dsn", dsn)
    table = list(csv.reader(io.StringIO(proc.stdout)))
    assert table[0] == ["key_a", "key_b", "similarity"]
    found = {frozenset(r[:2]) for r in table[1:]}
    for g, o in zip(groups, originals):
        assert {frozenset((str(o), str(k))) for k in g if k != o} <= found
    assert all(float(r[2]) >= 0.8 for r in table[1:])
    as_json = json.loads(cli("pairs", "items", "--format", "json", "--dsn", dsn).stdout)
    assert {frozenset((p["key_a"], p["key_b"])) for p in as_json} == found

    original = str(originals[0])
    similar = json.loads(cli("similar", "items", "--key", original, "--json", "--dsn", dsn).stdout)
    assert {s["key"] for s in similar} >= {str(k) for k in groups[0] if str(k) != original}
    text = conn.execute("SELECT title || E'\\n' || body FROM items WHERE id = %s", (originals[0],)).fetchone()[0]
    by_text = json.loads(cli("similar", "items", "--text", text, "--json", "--dsn", dsn).stdout)
    assert by_text[0] == {"key": original, "similarity": 1.0}

    status = json.loads(cli("status", "--json", "--dsn", dsn).stdout)
    assert [s["name"] for s in status] == ["items"]
    assert status[0]["rows_indexed"] == n and status[0]["duplicates"] > 0
    assert "items: public.items key id" in cli("status", "items", "--dsn", dsn).stdout


def test_errors_are_one_line(conn, dsn, items):
    for args, message in [
        (["dedupe", "nope"], "no collection named 'nope'"),
        (["similar", "items", "--key", "424242"], 'has no row with key "424242"'),
        (["dedupe", "items", "--keep-order", "id; drop table items"], "cannot read keep order item"),
        (["index", "items", "--key", "id", "--text", "body", "--ngram", "3"], "rerun with --reindex"),
    ]:
        proc = cli(*args, "--dsn", dsn)
        assert proc.returncode == 1, args
        assert proc.stderr.startswith("pgdedup: error: ") and message in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


def test_migrate_and_help():
    assert "usage: pgdedup index" in cli("index", "--help").stdout
    for command in ("demo", "migrate", "dedupe", "pairs", "similar", "status"):
        assert cli(command, "--help").returncode == 0


def test_migrate_command(conn, dsn):
    proc = cli("migrate", "--dsn", dsn)
    assert proc.returncode == 0 and f"pgdedup schema at revision {HEAD}" in proc.stdout
    assert conn.execute("SELECT to_regclass('pgdedup.signatures') IS NOT NULL").fetchone()[0]


def test_demo_on_given_dsn(dsn):
    proc = cli("demo", "--rows", "600", "--dsn", dsn)
    assert proc.returncode == 0, proc.stderr
    assert "loaded 600 sample rows" in proc.stdout and "group 1: kept" in proc.stdout
