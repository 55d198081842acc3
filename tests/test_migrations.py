"""The pgdedup schema through alembic: round trips, coexistence with an app's own history."""

from __future__ import annotations

import os
import signal
from importlib import resources
from pathlib import Path

import psycopg
import pytest
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from psycopg.conninfo import conninfo_to_dict
from sqlalchemy.engine import URL

import pgdedup

from clirun import cli, cli_background, one_line_error
from crashes import wait_for
from pgdedup.alembic_ops import current_revision, engine_for
from pgdedup.schema import HEAD

APP = Path(__file__).parent / "app_migrations"


def _objects(conn) -> set[tuple[str, str]]:
    rels = conn.execute("SELECT relname, relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                        "WHERE nspname = 'pgdedup'").fetchall()
    funcs = conn.execute("SELECT p.oid::regprocedure::text, 'f' FROM pg_proc p JOIN pg_namespace n "
                         "ON n.oid = p.pronamespace WHERE nspname = 'pgdedup'").fetchall()
    return set(rels) | set(funcs)


def test_upgrade_downgrade_upgrade(conn, dsn):
    pgdedup.migrate(dsn)
    head = _objects(conn)
    assert ("signatures", "r") in head and ("band_keys", "r") in head
    assert any(name.startswith("pgdedup.mark_duplicates(") for name, _ in head)
    assert current_revision(dsn) == HEAD
    pgdedup.downgrade(dsn, "0001_schema")
    assert current_revision(dsn) == "0001_schema"
    assert not any(name.startswith("pgdedup.mark_duplicates(") for name, _ in _objects(conn))
    pgdedup.downgrade(dsn, "base")
    assert current_revision(dsn) is None
    assert _objects(conn) <= {("pgdedup_version", "r"), ("pgdedup_version_pkc", "i")}
    pgdedup.migrate(dsn)
    assert _objects(conn) == head
    pgdedup.migrate(dsn)  # idempotent at head
    assert _objects(conn) == head


def _function_definitions(conn) -> dict[str, str]:
    """Each pgdedup function's definition, its SET lines sorted: they come in the order the
    settings were made (a downgrade may re-pin a search path after restoring other settings),
    which means nothing."""
    def canonical(definition: str) -> str:
        lines = definition.split("\n")
        settings = sorted(line for line in lines if line.startswith(" SET "))
        first = next((i for i, line in enumerate(lines) if line.startswith(" SET ")), len(lines))
        return "\n".join([line for line in lines[:first] if not line.startswith(" SET ")] + settings
                         + [line for line in lines[first:] if not line.startswith(" SET ")])

    return {name: canonical(definition) for name, definition in conn.execute(
        "SELECT p.oid::regprocedure::text, pg_get_functiondef(p.oid) FROM pg_proc p "
        "JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'pgdedup' AND p.prokind = 'f'").fetchall()}


def test_downgrading_the_newest_revision_gives_back_the_previous_ones_functions(conn, dsn):
    """Body for body and setting for setting (a downgrade puts replaced functions back from
    their own files, and their pinned search paths with them)."""
    previous = ScriptDirectory(str(resources.files("pgdedup.migrations"))).get_revision(HEAD).down_revision
    pgdedup.migrate(dsn, previous)
    fresh = _function_definitions(conn)
    pgdedup.migrate(dsn)
    pgdedup.downgrade(dsn, previous)
    assert _function_definitions(conn) == fresh


def test_data_survives_upgrade_from_first_revision(conn, dsn):
    pgdedup.migrate(dsn, "0001_schema")
    conn.execute("CREATE TABLE t (id int PRIMARY KEY, body text)")
    conn.execute("INSERT INTO t VALUES (1, 'one two three four five six'), (2, 'one two three four five six')")
    # revision 1 has no SQL functions yet; runtime commands never move an existing schema
    with pytest.raises(psycopg.errors.UndefinedFunction,
                       match=r"function pgdedup\.similarity\(integer\[\], integer\[\]\) does not exist"):
        conn.execute("SELECT pgdedup.similarity('{1}'::int[], '{1}'::int[])")
    with pytest.raises(pgdedup.SchemaMismatch, match=r"at revision 0001_schema.*run `pgdedup migrate`"):
        pgdedup.index("t", "id", ["body"], dsn=dsn, progress=False)
    one_line_error(cli("status", "--dsn", dsn), "at revision 0001_schema", "pgdedup migrate")
    assert current_revision(dsn) == "0001_schema"
    pgdedup.migrate(dsn)
    pgdedup.index("t", "id", ["body"], dsn=dsn, progress=False)
    assert current_revision(dsn) == HEAD
    assert conn.execute("SELECT pgdedup.similarity('t', '1', '2')").fetchone()[0] == 1.0


#: Revision 22's int4[] signatures of three rows (74565 = 0x12345), and their revision-23 sketches
#: written out by hand: the low 16 bits of each value.
INT_SIGNATURES = {"1": [1, -1, 65536, 74565], "2": [65537, -65536, 0, 74565], "3": []}
SKETCHES = {"1": "0000000000000001" "1111111111111111" "0000000000000000" "0010001101000101",
            "2": "0000000000000001" "0000000000000000" "0000000000000000" "0010001101000101",
            "3": ""}


def _revision_22_signatures(conn, dsn: str) -> None:
    """A schema at revision 22 holding ``INT_SIGNATURES`` for a table t of three rows."""
    pgdedup.migrate(dsn, "0022_unmark")
    conn.execute("CREATE TABLE t (id int PRIMARY KEY, body text)")
    conn.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, '')")
    cid = conn.execute("INSERT INTO pgdedup.collections (name, source_schema, source_table, key_column, text_columns, "
                       "key_type, num_perm, bands, rows_per_band, threshold, band_threshold, seed, ngram, unit, "
                       "algorithm) VALUES ('t', 'public', 't', 'id', '{body}', 'integer', 4, 2, 2, 0.8, 0.8, 1, 5, "
                       "'word', 1) "
                       "RETURNING collection_id").fetchone()[0]
    for key, sig in INT_SIGNATURES.items():
        conn.execute("INSERT INTO pgdedup.signatures (collection_id, row_key, row_id, source_md5, text_hash, "
                     "feature_count, signature, buckets) VALUES (%s, %s, %s, md5(%s)::uuid, %s, %s, %s::int[], '{}')",
                     (cid, key, int(key), key, int(key), len(sig), sig))


def test_signatures_become_sketches_and_back(conn, dsn):
    """Revision 23 converts stored int4[] signatures in place to the low 16 bits of each value
    (oracle: the bits written out by hand); estimates between converted rows are the agreement
    of those bits. Its downgrade gives back int4[] of the 16-bit values, clears the rows' md5
    and queues "every row" for a tracked collection, so the next index signs every row again."""
    _revision_22_signatures(conn, dsn)
    pgdedup.migrate(dsn, "0023_sketches")
    assert dict(conn.execute("SELECT row_key, signature::text FROM pgdedup.signatures").fetchall()) == SKETCHES
    assert conn.execute("SELECT pgdedup.similarity('t', '1', '2')").fetchone()[0] == 0.75
    assert conn.execute("SELECT pgdedup.similarity('t', '1', '3')").fetchone()[0] == 0.0
    assert conn.execute("SELECT reloptions FROM pg_class WHERE oid = 'pgdedup.status'::regclass").fetchone()[0] == [
        "security_invoker=true"]
    version = conn.execute("SELECT index_version FROM pgdedup.collections").fetchone()[0]
    conn.execute("UPDATE pgdedup.collections SET tracked = true")  # (no triggers: the flag is what counts)
    pgdedup.downgrade(dsn, "0022_unmark")
    back = dict(conn.execute("SELECT row_key, signature FROM pgdedup.signatures").fetchall())
    assert back == {"1": [1, 65535, 0, 9029], "2": [1, 0, 0, 9029], "3": []}  # 9029 = 0x2345
    assert conn.execute("SELECT pgdedup.similarity('t', '1', '2')").fetchone()[0] == 0.75
    assert conn.execute("SELECT count(*) FROM pgdedup.signatures "
                        "WHERE source_md5 <> '00000000-0000-0000-0000-000000000000'").fetchone()[0] == 0
    assert conn.execute("SELECT index_version FROM pgdedup.collections").fetchone()[0] == version + 1
    # a tracked collection's next index must not sign only the queued rows: "every row" is queued
    assert conn.execute("SELECT row_key FROM pgdedup.queue").fetchall() == [(None,)]
    # revision 6's status view is back, still run with the querying role's rights
    assert "to_regclass" in conn.execute("SELECT pg_get_viewdef('pgdedup.status')").fetchone()[0]
    assert conn.execute("SELECT reloptions FROM pg_class WHERE oid = 'pgdedup.status'::regclass").fetchone()[0] == [
        "security_invoker=true"]


def test_kill_9_during_the_sketch_conversion_leaves_revision_22_whole(conn, dsn):
    """``pgdedup migrate`` killed (SIGKILL) inside revision 23, while its ALTER of the signatures
    waits for a reader's lock: its transaction never commits, the schema stays at revision 22
    with every int4[] signature as it was, and a second migrate converts them all."""
    _revision_22_signatures(conn, dsn)
    reader = psycopg.connect(dsn)
    reader.execute("SELECT count(*) FROM pgdedup.signatures")  # holds ACCESS SHARE: the ALTER waits
    try:
        run = cli_background("migrate", "--dsn", dsn)
        # (the file is sent as one query; pg_stat_activity shows its first KB, the file's header)
        wait_for(conn, "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                        "AND query LIKE '%%pgdedup schema, version 23%%' AND datname = current_database())", run=run)
        os.kill(run.pid, signal.SIGKILL)
        run.wait()
    finally:
        reader.rollback()
        reader.close()
    wait_for(conn, "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE query LIKE '%%pgdedup schema, version 23%%' "
                    "AND pid <> pg_backend_pid() AND datname = current_database())")
    assert current_revision(dsn) == "0022_unmark"
    assert dict(conn.execute("SELECT row_key, signature FROM pgdedup.signatures").fetchall()) == INT_SIGNATURES
    assert conn.execute("SELECT to_regprocedure('pgdedup.sketch(integer[])')").fetchone()[0] is None
    assert cli("migrate", "--dsn", dsn).returncode == 0
    assert dict(conn.execute("SELECT row_key, signature::text FROM pgdedup.signatures").fetchall()) == SKETCHES


def test_app_alembic_version_untouched(conn, dsn):
    conn.execute("CREATE TABLE alembic_version (version_num varchar(32) NOT NULL PRIMARY KEY)")
    conn.execute("INSERT INTO alembic_version VALUES ('app_rev_42')")
    pgdedup.migrate(dsn)
    assert conn.execute("SELECT * FROM public.alembic_version").fetchall() == [("app_rev_42",)]
    assert conn.execute("SELECT version_num FROM pgdedup.pgdedup_version").fetchall() == [(HEAD,)]


def _app_config(dsn: str) -> Config:
    parts = conninfo_to_dict(dsn)
    url = URL.create("postgresql+psycopg", username=parts.get("user"), database=parts.get("dbname"),
                     query={"host": parts["host"], "port": str(parts.get("port", 5432))})
    cfg = Config()
    cfg.set_main_option("script_location", str(APP))
    cfg.set_main_option("sqlalchemy.url", url.render_as_string(hide_password=False).replace("%", "%%"))
    return cfg


def test_app_brings_pgdedup_up_from_its_own_migration(conn, dsn):
    cfg = _app_config(dsn)
    command.upgrade(cfg, "head")
    assert conn.execute("SELECT version_num FROM public.alembic_version").fetchall() == [("a1_app_tables",)]
    assert current_revision(dsn) == HEAD
    assert conn.execute("SELECT to_regclass('app_items_body') IS NOT NULL").fetchone()[0]
    conn.execute("INSERT INTO app_items VALUES (1, 'a b c d e f'), (2, 'a b c d e f g')")
    pgdedup.index("app_items", "id", ["body"], dsn=dsn, progress=False)
    assert conn.execute("SELECT rows_indexed FROM pgdedup.collections").fetchone()[0] == 2
    command.downgrade(cfg, "base")
    assert conn.execute("SELECT count(*) FROM public.alembic_version").fetchone()[0] == 0
    assert current_revision(dsn) is None
    assert conn.execute("SELECT to_regclass('app_items') IS NULL").fetchone()[0]


def test_engine_for_accepts_libpq_dsn(dsn):
    with engine_for(dsn).connect() as c:
        assert c.exec_driver_sql("SELECT 1").scalar() == 1


def test_autogenerate_filters_leave_pgdedup_alone(conn, dsn):
    """A real autogenerate compare of an app's models with a database where pgdedup created its
    schema and added its marking column: nothing to do with the filters, drops without them."""
    import sqlalchemy as sa
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from pgdedup.autogenerate import include_name, include_object

    models = sa.MetaData()
    sa.Table("feed_items", models, sa.Column("id", sa.BigInteger, primary_key=True), sa.Column("body", sa.Text))
    conn.execute("CREATE TABLE feed_items (id bigint PRIMARY KEY, body text)")
    conn.execute("INSERT INTO feed_items VALUES (1, 'one two three four five six'), (2, 'one two three four five six')")
    pgdedup.index("feed_items", "id", ["body"], dsn=dsn, progress=False)
    pgdedup.dedupe("feed_items", dsn=dsn)  # adds feed_items.duplicate_of
    params = conninfo_to_dict(dsn)  # the app's own engine: its search_path, not pgdedup's pinned one
    engine = sa.create_engine(URL.create("postgresql+psycopg", username=params["user"], database=params["dbname"],
                                         query={"host": params["host"], "port": params["port"]}))
    try:
        with engine.connect() as app:
            unfiltered = compare_metadata(MigrationContext.configure(app, opts={"include_schemas": True}), models)
            filtered = compare_metadata(MigrationContext.configure(app, opts={
                "include_schemas": True, "include_name": include_name, "include_object": include_object}), models)
    finally:
        engine.dispose()
    assert any(d[0] == "remove_table" and d[1].schema == "pgdedup" for d in unfiltered if isinstance(d, tuple))
    assert any(d[0] == "remove_column" and d[3].name == "duplicate_of" for d in unfiltered if isinstance(d, tuple))
    assert filtered == []


def test_offline_sql_of_an_app_includes_pgdedups_ddl_and_runs(conn, dsn):
    """`alembic upgrade --sql` of an app whose history calls pgdedup.migrate: the script holds
    pgdedup's DDL, and running it on an empty database gives a working schema at head."""
    import io

    cfg = _app_config(dsn)
    out = io.StringIO()
    cfg.output_buffer = out
    command.upgrade(cfg, "head", sql=True)
    script = out.getvalue()
    assert "CREATE TABLE app_items" in script and "CREATE TABLE pgdedup.signatures" in script
    assert "CREATE FUNCTION pgdedup.update_duplicates" in script
    assert script.index("CREATE TABLE app_items") < script.index("CREATE TABLE pgdedup.signatures") \
        < script.index("CREATE INDEX app_items_body"), "in the order the app's migration asks for"
    assert conn.execute("SELECT to_regnamespace('pgdedup')").fetchone()[0] is None  # nothing ran
    conn.execute(script)
    assert current_revision(dsn) == HEAD
    assert conn.execute("SELECT version_num FROM public.alembic_version").fetchall() == [("a1_app_tables",)]
    conn.execute("INSERT INTO app_items VALUES (1, 'a b c d e f'), (2, 'a b c d e f')")
    pgdedup.index("app_items", "id", ["body"], dsn=dsn, progress=False)
    assert pgdedup.dedupe("app_items", alter=False, dsn=dsn).duplicates == 1


@pytest.mark.parametrize("isolation", [None, "AUTOCOMMIT"])
def test_pgdedups_sql_in_an_apps_migration_binds_only_built_in_operators(conn, dsn, isolation):
    """An app's migration runs pgdedup's SQL on the app's connection, whose search_path has
    ``public`` first. An operator planted there must not be what pgdedup's CHECK constraints,
    policies and views bind when they are created (they would run it in every later session),
    also when the app's connection is in autocommit mode (a transaction-local pin sent as a
    statement of its own would be gone before pgdedup's SQL ran)."""
    conn.execute("CREATE TABLE planted_calls (n int)")
    conn.execute("""CREATE FUNCTION public.gt(double precision, integer) RETURNS boolean LANGUAGE sql AS
                    'INSERT INTO public.planted_calls VALUES (1) RETURNING $1 OPERATOR(pg_catalog.>) $2'""")
    conn.execute("CREATE OPERATOR public.> (LEFTARG = double precision, RIGHTARG = integer, FUNCTION = public.gt)")
    conn.execute("ALTER DATABASE " + conn.info.dbname + " SET search_path = public, pg_catalog")
    try:
        cfg = _app_config(dsn)
        if isolation:
            cfg.set_main_option("isolation_level", isolation)
        command.upgrade(cfg, "head")
        planted = conn.execute("SELECT oid FROM pg_operator WHERE oprnamespace = 'public'::regnamespace").fetchone()[0]
        assert conn.execute("SELECT count(*) FROM pg_depend WHERE refobjid = %s AND classid <> 'pg_operator'::regclass",
                            (planted,)).fetchone()[0] == 0
        conn.execute("INSERT INTO app_items VALUES (1, 'a b c d e f'), (2, 'a b c d e f g')")
        pgdedup.index("app_items", "id", ["body"], dsn=dsn, progress=False)
        pgdedup.dedupe("app_items", alter=False, dsn=dsn)
        assert conn.execute("SELECT count(*) FROM planted_calls").fetchone()[0] == 0
    finally:
        conn.execute("ALTER DATABASE " + conn.info.dbname + " RESET search_path")


def _autovacuum_options(conn) -> dict[str, list[str]]:
    return dict(conn.execute("SELECT relname, coalesce(reloptions, '{}') FROM pg_class "
                             "WHERE oid IN ('pgdedup.signatures'::regclass, 'pgdedup.band_keys'::regclass)").fetchall())


def test_autovacuum_keeps_up_with_the_collections_tables_and_an_administrators_choice_stays(conn, dsn):
    """Revision 49: autovacuum vacuums signatures and band_keys after 1 % of their rows changed
    and analyzes them after 2 %, not 20 % and 10 %; an option an administrator set on them
    before is kept by the upgrade and by the downgrade, which resets only its own."""
    ours = ["autovacuum_vacuum_scale_factor=0.01", "autovacuum_vacuum_insert_scale_factor=0.01",
            "autovacuum_analyze_scale_factor=0.02"]
    pgdedup.migrate(dsn, "0048_statistics_notices")
    conn.execute("ALTER TABLE pgdedup.band_keys SET (autovacuum_vacuum_scale_factor = 0.05, fillfactor = 90)")
    pgdedup.migrate(dsn, "0049_autovacuum")
    options = _autovacuum_options(conn)
    assert sorted(options["signatures"]) == sorted(ours)
    assert sorted(options["band_keys"]) == sorted(["autovacuum_vacuum_scale_factor=0.05", "fillfactor=90"] + ours[1:])
    pgdedup.downgrade(dsn, "0048_statistics_notices")
    assert _autovacuum_options(conn) == {"signatures": [],
                                         "band_keys": ["autovacuum_vacuum_scale_factor=0.05", "fillfactor=90"]}
