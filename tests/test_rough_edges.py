"""The rough edges a new user meets: each is refused up front, in pgdedup's own words, before
anything is written (issue: correctness and contract, "Surprises")."""

from __future__ import annotations

import subprocess
import sys

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

import pgdedup

from clirun import cli, one_line_error


def _schema_exists(conn) -> bool:
    return conn.execute("SELECT to_regnamespace('pgdedup') IS NOT NULL").fetchone()[0]


@pytest.fixture
def docs(conn):
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text, raw bytea, meta jsonb)")
    conn.execute("""INSERT INTO docs SELECT i, 'the quick brown fox jumps over the lazy dog ' || i,
                           convert_to('the quick brown fox ' || i, 'UTF8'),
                           jsonb_build_object('title', 'the quick brown fox jumps over the lazy dog')
                    FROM generate_series(1, 30) i""")
    conn.commit()


@pytest.mark.parametrize("args,message", [
    (["--bands", "0", "--rows", "0"], "bands must be a positive integer, not 0"),
    (["--bands", "16", "--rows", "0"], "rows must be a positive integer, not 0"),
    (["--band-threshold", "0"], "band_threshold must be in (0, threshold], not 0.0"),
    (["--chunk-size", "0"], "chunk_size must be a positive integer, not 0"),
    (["--workers", "0"], "workers must be a positive integer, not 0"),
    (["--workers", "-3"], "workers must be a positive integer, not -3"),
    (["--name", "n" * 53], "a collection name has 1 to 52 bytes"),
    (["--text", "raw"], "text column 'raw' is bytea"),
])
def test_zero_is_not_a_default_and_bad_options_write_nothing(conn, dsn, docs, args, message):
    text = [] if "--text" in args else ["--text", "body"]
    one_line_error(cli("index", "docs", "--key", "id", *text, *args, "--dsn", dsn), message)
    assert not _schema_exists(conn)


def test_a_long_table_name_needs_a_short_collection_name(conn, dsn):
    long = "t" * 60
    conn.execute(f'CREATE TABLE "{long}" (id int PRIMARY KEY, body text)')
    conn.execute(f"""INSERT INTO "{long}" VALUES (1, 'some words here and more'), (2, 'some words here and more')""")
    conn.commit()
    one_line_error(cli("index", long, "--key", "id", "--text", "body", "--dsn", dsn), "choose one with --name")
    assert cli("index", long, "--key", "id", "--text", "body", "--name", "short", "--dsn", dsn).returncode == 0
    proc = cli("dedupe", "short", "--no-alter", "--dsn", dsn)
    assert proc.returncode == 0 and "marked in pgdedup.short_duplicates" in proc.stdout, proc.stderr


def test_other_types_are_indexed_as_their_text_form(conn, dsn, docs):
    """jsonb is read as its JSON text (documented): identical JSON values are exact duplicates."""
    pgdedup.index("docs", "id", ["meta"], name="meta", dsn=dsn, progress=False)
    result = pgdedup.dedupe("meta", alter=False, dsn=dsn)
    assert (result.duplicates, result.groups) == (29, 1)


def test_many_workers_on_few_rows_start_few_processes(conn, dsn, docs):
    """30 rows in chunks of 2000 are one chunk: one signing process, whatever --workers says."""
    proc = subprocess.Popen([sys.executable, "-c", "import pgdedup, sys; pgdedup.index('docs', 'id', ['body'], "
                             "workers=50, dsn=sys.argv[1], progress=False)", dsn], text=True)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                      "AND application_name LIKE 'pgdedup%%'").fetchone()[0])
    assert proc.returncode == 0
    # the run's own, its source lock's, the schema's, one signer
    assert peak <= 4, f"{peak} pgdedup sessions for 30 rows"


@pytest.mark.parametrize("order,message", [
    (",", 'keep order "," has an empty item'),
    ("id,", 'keep order "id," has an empty item'),
    ("nosuch desc", 'keep order column "nosuch" does not exist in public.docs'),
    ("id; drop table docs", 'cannot read keep order item "id; drop table docs"'),
])
def test_keep_order_errors_have_pgdedup_sqlstate(conn, dsn, docs, order, message):
    pgdedup.index("docs", "id", ["body"], dsn=dsn, progress=False)
    one_line_error(cli("dedupe", "docs", "--keep-order", order, "--dsn", dsn), message)
    with pytest.raises(psycopg.Error) as info:
        conn.execute("SELECT * FROM pgdedup.find_duplicates('docs', p_keep_order => %s)", (order,))
    assert info.value.sqlstate == "PD003"
    conn.rollback()
    with pytest.raises(pgdedup.InvalidArgument):
        pgdedup.dedupe("docs", keep_order=order, dsn=dsn)


def test_given_values_are_reported_as_given():
    one_line_error(cli("tune", "--threshold", "1.5"), "threshold must be between 0 and 1 (exclusive), not 1.5")
    one_line_error(cli("tune", "--threshold", "0.8", "--fp-weight", "2"), "fp_weight must be between 0 and 1")


def test_sql_ascii_databases_are_refused_in_words(conn, dsn):
    conn.autocommit = True
    conn.execute("CREATE DATABASE pgdedup_ascii ENCODING SQL_ASCII TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'")
    try:
        ascii_dsn = make_conninfo(**{**conninfo_to_dict(dsn), "dbname": "pgdedup_ascii"})
        with psycopg.connect(ascii_dsn, autocommit=True) as other:
            other.execute("CREATE TABLE t (id int PRIMARY KEY, body text)")
        one_line_error(cli("index", "t", "--key", "id", "--text", "body", "--dsn", ascii_dsn),
                       "encoding SQL_ASCII are not supported")
    finally:
        conn.execute("DROP DATABASE pgdedup_ascii")


def test_import_does_not_load_alembic_or_sqlalchemy():
    code = ("import sys, pgdedup, pgdedup.cli; "
            "print(sorted(m for m in ('alembic', 'sqlalchemy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
    assert callable(pgdedup.migrate) and callable(pgdedup.downgrade)
