"""Bring the ``pgdedup`` schema up (or down) with alembic, on a DSN or an existing connection.

pgdedup's migrations live in the package (``migrations/`` in the source tree) and record their
version in ``pgdedup.pgdedup_version``. An application that uses alembic itself calls
``pgdedup.migrate(op.get_bind())`` from one of its own migrations (or its ``env.py``): pgdedup's
revisions then run inside the application's transaction, and the application's own
``alembic_version`` table is never touched.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from importlib import resources
from collections.abc import Callable, Iterable, Iterator, Mapping

import alembic.context
import alembic.op
from alembic import command
from alembic.config import Config
from alembic.util import CommandError
from alembic.runtime.migration import MigrationContext
import psycopg
from sqlalchemy import Connection, Engine, create_engine

from .db import connect
from .errors import InvalidArgument, translated
from .schema import SCHEMA, VERSION_TABLE

Target = str | Engine | Connection


def read_sql(name: str) -> str:
    """The text of one of the versioned SQL files shipped in ``sql/``."""
    return (resources.files("pgdedup.sql") / name).read_text(encoding="utf-8")


#: Around pgdedup's SQL in a migration: the application's connection keeps the application's
#: search_path, and what a migration creates binds its operators and functions at once (a CHECK
#: constraint, a policy or a view made with ``public`` on the path could bind an operator another
#: role put there, to run with the rights of every later pgdedup session). So the path is pinned
#: to pg_catalog for pgdedup's SQL and given back after it, in SQL, so an offline script does the same.
PIN = ("SELECT pg_catalog.set_config('pgdedup.search_path', pg_catalog.current_setting('search_path'), true), "
       "pg_catalog.set_config('search_path', 'pg_catalog, pg_temp', true);")
UNPIN = "SELECT pg_catalog.set_config('search_path', pg_catalog.current_setting('pgdedup.search_path'), true);"


def run_sql(sql: str) -> None:
    """Execute SQL from inside a migration, in its transaction, with ``search_path`` pinned to
    pg_catalog (``PIN``) and given back afterwards, sent as one string: the pin is local to a
    transaction, and an application's connection in autocommit mode would otherwise drop it
    before the SQL ran.

    It goes straight to the psycopg connection without parameters, so ``%`` and ``:name`` in
    the SQL are never taken for placeholders.
    """
    pinned = f"{PIN}\n{sql}\n{UNPIN}"  # one string: one transaction even on an autocommit connection
    if alembic.context.is_offline_mode():  # `alembic upgrade --sql`: the SQL goes into the script as it is
        alembic.op.get_context().impl.static_output(pinned)
        return
    alembic.op.get_bind().connection.driver_connection.execute(pinned)


def run_sql_file(name: str) -> None:
    """Execute a whole ``sql/`` file from inside a migration, in its transaction."""
    run_sql(read_sql(name))


def function_definitions(name: str, functions: Iterable[str], renamed: Mapping[str, str] | None = None) -> str:
    """The statements of released file ``name`` that define the given pgdedup functions: each
    ``CREATE [OR REPLACE] FUNCTION pgdedup.<f>(...) ... $$...$$;`` and ``ALTER FUNCTION pgdedup.<f>(...)``.

    A downgrade uses it to put back the functions a later revision replaced, from the one file
    that defines them, instead of a copy; so every ``CREATE FUNCTION`` comes back as ``CREATE OR
    REPLACE FUNCTION`` (the function exists at that point). ``renamed`` maps a function of the
    file to the name its body has had since a later revision renamed it: revision 24 renamed five
    functions ``<name>_unchecked`` behind guarding wrappers of the old names, and revision 29
    ``track`` to ``track_triggers``; a later revision that redefines such a body and puts it back
    from the older file must define it under the new name, or it would replace the wrapper
    (tests/test_security.py checks that every wrapper still guards).
    Raises ValueError if a function is not defined there.
    """
    text = read_sql(name)
    statements = []
    for function in functions:
        creates = list(re.finditer(rf"^CREATE (?:OR REPLACE )?FUNCTION pgdedup\.{function}\(", text, re.M))
        if not creates:
            raise ValueError(f"{name} defines no function pgdedup.{function}")
        found = []
        for create in creates:
            body_open = text.index("$$", create.start())
            end = text.index(";", text.index("$$", body_open + 2)) + 1
            found.append(re.sub(r"^CREATE (?:OR REPLACE )?FUNCTION", "CREATE OR REPLACE FUNCTION",
                                text[create.start():end]))
        found += [alter for alter in re.findall(rf"^ALTER FUNCTION pgdedup\.{function}\(.*?;$", text, re.M | re.S)
                  if " RENAME TO " not in alter]  # a rename is the revision's move, not the definition
        new_name = (renamed or {}).get(function)
        statements += [statement.replace(f"FUNCTION pgdedup.{function}(", f"FUNCTION pgdedup.{new_name}(", 1)
                       if new_name else statement for statement in found]
    return "\n".join(statements)


def view_definition(name: str, view: str) -> str:
    """The ``CREATE [OR REPLACE] VIEW pgdedup.<view> AS ...;`` statement of released file
    ``name`` (its last one, should the file define the view twice), as ``CREATE OR REPLACE
    VIEW``: a downgrade puts back the view a later revision replaced from the file that defined
    it, as ``function_definitions`` does for functions. The view's options (security_invoker)
    are not part of it: ``CREATE OR REPLACE VIEW`` resets them, so the caller sets them again.
    Raises ValueError if the file does not define the view.
    """
    text = read_sql(name)
    creates = list(re.finditer(rf"^CREATE (?:OR REPLACE )?VIEW pgdedup\.{view} AS$", text, re.M))
    if not creates:
        raise ValueError(f"{name} defines no view pgdedup.{view}")
    start = creates[-1].start()
    return re.sub(r"^CREATE (?:OR REPLACE )?VIEW", "CREATE OR REPLACE VIEW", text[start:text.index(";", start) + 1])


def sql_steps(revision: str) -> tuple[Callable[[], None], Callable[[], None]]:
    """(upgrade, downgrade) of a revision that applies ``sql/<revision>.sql`` / ``.down.sql``."""
    return (lambda: run_sql_file(f"{revision}.sql")), (lambda: run_sql_file(f"{revision}.down.sql"))


def engine_for(dsn: str) -> Engine:
    """A SQLAlchemy engine for a libpq DSN (URI or key=value; empty means the PG* environment)."""
    return create_engine("postgresql+psycopg://", creator=lambda: connect(dsn), poolclass=None)


def _config(connection: Connection) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(resources.files("pgdedup.migrations")))
    cfg.attributes["connection"] = connection
    return cfg


@contextmanager
def _connection(target: Target) -> Iterator[Connection]:
    """A connection in a transaction: the caller's own one, or a new one that commits at the end."""
    if isinstance(target, Connection):
        yield target
        return
    engine = engine_for(target) if isinstance(target, str) else target
    try:
        with engine.begin() as conn:
            yield conn
    finally:
        if isinstance(target, str):
            engine.dispose()


@contextmanager
def _keep_outer_alembic() -> Iterator[None]:
    """Running alembic inside an app's alembic run replaces, then removes, the module-level
    ``alembic.context`` / ``alembic.op`` proxies; put the app's back afterwards."""
    outer = (getattr(alembic.context, "_proxy", None), getattr(alembic.op, "_proxy", None))
    try:
        yield
    finally:
        for proxy in outer:
            if proxy is not None:
                proxy._install_proxy()


@contextmanager
def _user_errors() -> Iterator[None]:
    """alembic's CommandError (e.g. an unknown revision) is a user mistake: InvalidArgument."""
    try:
        yield
    except CommandError as exc:
        raise InvalidArgument(str(exc)) from exc


def migrate(target: Target = "", revision: str = "head") -> None:
    """Upgrade the pgdedup schema to ``revision`` (default: the newest).

    Called from an application's migration while alembic runs offline (``alembic upgrade
    --sql``), it writes pgdedup's SQL into the application's script instead (every revision up
    to ``revision``: an offline run cannot know the database's current one).

    Raises:
        PermissionDenied: the role may not create the schema or its objects.
        InvalidArgument: no such revision.
        UnsafeOperation: an existing ``pgdedup`` schema, or an object in it, belongs to a role
            that could run code with this role's rights through it (``schema.check_owners``).
    """
    if _offline_app():
        _offline_upgrade(revision)
        return
    with translated(), _connection(target) as conn, _keep_outer_alembic(), _user_errors():
        command.upgrade(_config(conn), revision)


def migrate_checked(dsn: str, check: Callable[[psycopg.Connection], object] | None) -> None:
    """``migrate(dsn)`` to the newest revision, committed only once ``check`` (given the
    migrating connection, inside the migration's transaction) has returned: a command that
    creates the schema on first use and then refuses its input leaves none behind.

    Raises:
        PermissionDenied: the role may not create the schema or its objects.
        Whatever ``check`` raises (nothing is committed then).
    """
    engine = engine_for(dsn)
    try:
        with translated(), engine.begin() as conn:  # (the commit's errors translated too)
            migrate(conn)
            if check is not None:
                check(conn.connection.driver_connection)
    finally:
        engine.dispose()


def _offline_app() -> bool:
    """Whether we are called from an application's migration that runs offline (``--sql``)."""
    try:
        return alembic.context.is_offline_mode()
    except (NameError, AttributeError):  # no alembic run in progress
        return False


def _offline_upgrade(revision: str) -> None:
    """Write pgdedup's revisions up to ``revision`` (from none: an offline run cannot ask the
    database where it stands) into the application's offline script, after its own SQL."""
    cfg = Config()
    cfg.set_main_option("script_location", str(resources.files("pgdedup.migrations")))
    cfg.attributes["output_buffer"] = alembic.op.get_context().impl.output_buffer
    with _keep_outer_alembic(), _user_errors():
        command.upgrade(cfg, revision, sql=True)


def downgrade(target: Target, revision: str = "base") -> None:
    """Downgrade the pgdedup schema to ``revision`` (``base`` removes everything but the schema).

    Raises:
        InvalidArgument: no such revision.
    """
    with translated(), _connection(target) as conn, _keep_outer_alembic(), _user_errors():
        command.downgrade(_config(conn), revision)


def current_revision(target: Target) -> str | None:
    """The schema revision recorded in ``pgdedup.pgdedup_version``, or None."""
    with _connection(target) as conn:
        ctx = MigrationContext.configure(
            conn, opts={"version_table": VERSION_TABLE, "version_table_schema": SCHEMA})
        return ctx.get_current_revision()
