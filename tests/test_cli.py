"""The pgdedup command line, run as a user runs it (a subprocess), against a real database."""

from __future__ import annotations

import csv
import io
import json

import pytest

import pgdedup
from pgdedup import cli as cli_module
from pgdedup.schema import HEAD

from clirun import cli, one_line_error
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
    assert proc.stdout.startswith(f"deduped items (full): {n} rows examined, ")
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
    assert status[0]["rows_indexed"] == n
    assert status[0]["marked"] == sum(len(g) - 1 for g in groups)  # the in-place result
    assert status[0]["duplicates"] == 0  # no non-invasive result yet
    assert status[0]["mark_column"] == "duplicate_of" and status[0]["stale"] == []
    assert status[0]["source_missing"] is False
    assert "items: public.items key id" in cli("status", "items", "--dsn", dsn).stdout


def test_errors_are_one_line(conn, dsn, items):
    for args, message in [
        (["dedupe", "nope"], "no collection named 'nope'"),
        (["similar", "items", "--key", "424242"], 'has no row with key "424242"'),
        (["dedupe", "items", "--keep-order", "id; drop table items"], "cannot read keep order item"),
        (["index", "items", "--key", "id", "--text", "body", "--ngram", "3"], "rerun with --reindex"),
    ]:
        line = one_line_error(cli(*args, "--dsn", dsn), message)
        assert not line.startswith("pgdedup: error: pgdedup:")


@pytest.mark.parametrize("args", [["pairs", "feed"], ["dedupe", "feed"], ["similar", "feed", "--key", "1"],
                                  ["tune", "feed", "--threshold", "0.8"], ["status", "feed"]])
def test_commands_before_any_schema_say_so_in_one_line(conn, dsn, args):
    proc = cli(*args, "--dsn", dsn)
    one_line_error(proc, "no collection named 'feed' (no pgdedup schema in this database yet")
    assert proc.stdout == "" or args[0] == "tune"  # no CSV header before the error


def test_contract_of_migrate_version_debug_and_demo(conn, dsn, tmp_path):
    one_line_error(cli("migrate", "--revision", "nosuch", "--dsn", dsn), "nosuch")
    version = cli("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"pgdedup {pgdedup.__version__}"
    assert pgdedup.__version__[0].isdigit()
    debug = cli("--debug", "dedupe", "nope", "--dsn", dsn)
    assert debug.returncode == 1 and "Traceback" in debug.stderr and "CollectionNotFound" in debug.stderr
    env = {"PGDEDUP_PG_BINDIR": str(tmp_path / "nowhere"), "TMPDIR": str(tmp_path)}
    one_line_error(cli("demo", env=env), "initdb failed")
    assert [p.name for p in tmp_path.iterdir()] == []  # the failed start left no temp directory


def test_demo_never_drops_a_table_it_did_not_create(conn, dsn):
    conn.execute("CREATE TABLE feed_items (id int PRIMARY KEY, note text)")
    conn.execute("INSERT INTO feed_items VALUES (1, 'precious')")
    one_line_error(cli("demo", "--rows", "50", "--dsn", dsn), "the demo did not create it")
    assert conn.execute("SELECT note FROM feed_items").fetchall() == [("precious",)]


def test_migrate_and_help():
    assert "usage: pgdedup index" in cli("index", "--help").stdout
    for command in ("demo", "migrate", "dedupe", "pairs", "similar", "status"):
        assert cli(command, "--help").returncode == 0


def test_migrate_command(conn, dsn):
    status = cli("status", "--dsn", dsn)  # before any schema: says so, creates nothing
    assert status.returncode == 0 and status.stdout.startswith("no collections yet"), status.stderr
    assert conn.execute("SELECT to_regnamespace('pgdedup') IS NULL").fetchone()[0]
    proc = cli("migrate", "--revision", "0002_dedupe", "--dsn", dsn)
    assert proc.returncode == 0 and "pgdedup schema at revision 0002_dedupe" in proc.stdout, proc.stderr
    assert conn.execute("SELECT to_regclass('pgdedup.results') IS NULL").fetchone()[0]  # a revision-4 table
    proc = cli("migrate", "--dsn", dsn)
    assert proc.returncode == 0 and f"pgdedup schema at revision {HEAD}" in proc.stdout
    assert conn.execute("SELECT to_regclass('pgdedup.signatures') IS NOT NULL").fetchone()[0]


def test_demo_on_given_dsn(dsn):
    proc = cli("demo", "--rows", "600", "--dsn", dsn)
    assert proc.returncode == 0, proc.stderr
    assert "loaded 600 sample rows" in proc.stdout and "group 1: kept" in proc.stdout


def test_every_summary_as_json(conn, dsn, items):
    """--json on each command that prints a summary: one JSON object, the same numbers."""
    groups, originals, n = items

    def run(*args: str) -> dict:
        proc = cli(*args, "--json", "--dsn", dsn)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    assert run("migrate") == {"revision": HEAD}
    indexed = run("index", "items")
    assert (indexed["name"], indexed["source_rows"], indexed["signed"], indexed["unchanged"]) == ("items", n, 0, n)
    assert indexed["params"]["bands"] == 16
    deduped = run("dedupe", "items", "--keep-order", "published_at, id")
    marked = conn.execute("SELECT count(*) FROM items WHERE duplicate_of IS NOT NULL").fetchone()[0]
    assert deduped["kind"] == "full" and deduped["duplicates"] == marked > 0
    assert run("track", "items") == {"name": "items", "tracked": True}
    assert run("unmark", "items") == {"name": "items", "marks_cleared": marked}
    assert run("drop", "items") == {"name": "items", "rows_forgotten": n, "unmarked": False}


def test_only_pgdedups_own_warnings_become_its_one_line_warnings(capsys):
    """The CLI prints a ``StatisticsWarning`` as ``pgdedup: warning: ...`` (above any progress
    bar); another library's warning goes to Python's usual handler, category and origin kept."""
    passed = []
    show = cli_module._warning_lines(lambda message, category, *rest: passed.append((str(message), category)))
    show(pgdedup.StatisticsWarning("pgdedup.leaders not analyzed"), pgdedup.StatisticsWarning, "x.py", 1)
    show(RuntimeWarning("overflow encountered in multiply"), RuntimeWarning, "y.py", 2)
    assert capsys.readouterr().err == "pgdedup: warning: pgdedup.leaders not analyzed\n"
    assert passed == [("overflow encountered in multiply", RuntimeWarning)]
