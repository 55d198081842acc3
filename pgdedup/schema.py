"""Where pgdedup's schema stands, without importing alembic (which ``migrate`` needs).

``require_head`` is what runtime commands call: they create the schema when there is none (which
needs CREATE on the database), and otherwise only check that it is at this pgdedup's revision;
they never move it, so an application's pinned history stays what it says, and a role with just
USAGE and table privileges can index and dedupe.
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg

from .errors import SchemaMismatch

#: Advisory lock class of a collection's lock (taken by sql/0003's lock_collection: exclusive by
#: index and dedupe runs, shared by an application's add); the object id is the collection's id.
COLLECTION_LOCK = 1885824100
#: Advisory lock class of a collection's watcher (one ``pgdedup watch`` per collection).
WATCH_LOCK = 1885824101

SCHEMA = "pgdedup"
VERSION_TABLE = "pgdedup_version"
#: The newest revision in ``migrations/versions`` (a test checks it against alembic's head).
HEAD = "0027_copies"


def revision(conn: psycopg.Connection) -> str | None:
    """The revision recorded in ``pgdedup.pgdedup_version``, or None when there is no schema."""
    if not conn.execute("SELECT pg_catalog.to_regclass('pgdedup.pgdedup_version') IS NOT NULL").fetchone()[0]:
        return None
    row = conn.execute("SELECT version_num FROM pgdedup.pgdedup_version").fetchone()
    return row[0] if row else None


def require_head(conn: psycopg.Connection, dsn: str,
                 check: Callable[[psycopg.Connection], object] | None = None) -> None:
    """Create the schema on ``dsn`` when there is none; refuse to work on one at another revision.

    Runtime commands never move an existing schema: an application that carries pgdedup's
    revisions in its own migration history decides when it upgrades (``pgdedup migrate``, or
    ``pgdedup.migrate(bind, revision)`` from one of its migrations). ``check`` runs on the
    migrating connection before the new schema is committed (it may use pgdedup's SQL
    functions): if it raises, no schema is left behind.

    Raises:
        SchemaMismatch: the schema is at another revision than this pgdedup's.
        PermissionDenied: there is no schema and the role may not create it.
        Whatever ``check`` raises.
    """
    if check_revision(conn) is None:
        from .alembic_ops import migrate_checked  # alembic is imported only when a migration runs
        migrate_checked(dsn, check)


def check_revision(conn: psycopg.Connection) -> str | None:
    """The schema's revision (None: no schema yet), if it is this pgdedup's own.

    Raises:
        SchemaMismatch: the schema exists at another revision.
    """
    found = revision(conn)
    if found is not None and found != HEAD:
        raise SchemaMismatch(f"the pgdedup schema in this database is at revision {found}, and this pgdedup "
                             f"(version {_version()}) works with revision {HEAD}: run `pgdedup migrate` "
                             "(or upgrade it in your application's migrations) first")
    return found


def _version() -> str:
    from . import __version__
    return __version__
