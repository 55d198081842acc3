"""Where pgdedup's schema stands, without importing alembic (which ``migrate`` needs).

``require_head`` is what runtime commands call: they create the schema when there is none (which
needs CREATE on the database), and otherwise only check that it is at this pgdedup's revision;
they never move it, so an application's pinned history stays what it says, and a role with just
USAGE and table privileges can index and dedupe.
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg

from .errors import SchemaMismatch, UnsafeOperation

#: Advisory lock class of a collection's lock (taken by sql/0003's lock_collection: exclusive by
#: index and dedupe runs, shared by an application's add); the object id is the collection's id.
COLLECTION_LOCK = 1885824100
#: Advisory lock class of a collection's watcher (one ``pgdedup watch`` per collection).
WATCH_LOCK = 1885824101

SCHEMA = "pgdedup"
VERSION_TABLE = "pgdedup_version"
#: The newest revision in ``migrations/versions`` (a test checks it against alembic's head).
HEAD = "0060_unmark_lock_order"


#: The first object of schema pgdedup (the schema included) whose owner the current role may not
#: trust: (kind, name, owner), or no row. Trusted: a superuser and the current role; for a role
#: that is not a superuser, also the schema's owner (the role that ran the migrations, whose
#: functions it runs by design, docs/security.md).
UNTRUSTED_OBJECT = """
WITH ns AS (SELECT n.oid, n.nspowner, n.nspacl FROM pg_catalog.pg_namespace n WHERE n.nspname = 'pgdedup'),
objects (kind, name, owner) AS (
    SELECT 'schema', 'pgdedup', ns.nspowner FROM ns
    UNION ALL SELECT 'function', p.oid::pg_catalog.regprocedure::text, p.proowner
              FROM pg_catalog.pg_proc p JOIN ns ON p.pronamespace = ns.oid
    UNION ALL SELECT 'relation', c.oid::pg_catalog.regclass::text, c.relowner
              FROM pg_catalog.pg_class c JOIN ns ON c.relnamespace = ns.oid
    UNION ALL SELECT 'type', t.oid::pg_catalog.regtype::text, t.typowner
              FROM pg_catalog.pg_type t JOIN ns ON t.typnamespace = ns.oid
    UNION ALL SELECT 'operator', o.oid::pg_catalog.regoperator::text, o.oprowner
              FROM pg_catalog.pg_operator o JOIN ns ON o.oprnamespace = ns.oid
    UNION ALL SELECT 'create', 'CREATE', a.grantee  -- granted CREATE: may add an object at any moment
              FROM ns, pg_catalog.aclexplode(ns.nspacl) a WHERE a.privilege_type = 'CREATE')
SELECT o.kind, o.name, coalesce(r.rolname, 'PUBLIC') FROM objects o LEFT JOIN pg_catalog.pg_roles r ON r.oid = o.owner
WHERE NOT coalesce(r.rolsuper OR r.rolname = current_user
                   OR (o.owner = (SELECT ns.nspowner FROM ns)
                       AND NOT (SELECT m.rolsuper FROM pg_catalog.pg_roles m WHERE m.rolname = current_user)), false)
LIMIT 1"""


def check_owners(conn: psycopg.Connection) -> None:
    """Refuse a ``pgdedup`` schema holding code that another role could run with this role's
    rights. A role that may create schemas (the database's owner, often an application's role)
    could make an empty ``pgdedup`` schema before a superuser first migrates, or plant its own
    ``pgdedup.pgdedup_version`` and functions: as the schema's owner it may then replace any
    function in it, and pgdedup, running as a superuser, would call them. So a superuser works
    only with a schema whose objects superusers own (or itself), and any role only with objects
    owned by superusers, itself, or the schema's owner. The same roles are the only ones that may
    be granted CREATE on the schema (PUBLIC neither): another could add an object after this
    check (an overload that a call with a smallint argument would pick, say) while the command
    runs. (Members of a trusted role act as it: its grant is theirs, and not looked at.)

    Raises:
        UnsafeOperation: the first object owned by another role (its kind, name and owner).
    """
    found = conn.execute(UNTRUSTED_OBJECT).fetchone()
    if found is not None:
        raise untrusted(*found)


def untrusted(kind: str, name: str, owner: str) -> UnsafeOperation:
    """The error for a row of ``UNTRUSTED_OBJECT`` (also raised by the migrations' environment,
    which reads it through the application's SQLAlchemy connection)."""
    if kind == "create":
        return UnsafeOperation(
            f"{owner} may create objects in schema pgdedup, so could add code there (a function pgdedup's calls "
            f"resolve to) while you run it; REVOKE CREATE ON SCHEMA pgdedup FROM {owner}, or run pgdedup as {owner}")
    what = "the schema pgdedup" if kind == "schema" else f"the {kind} {name} in schema pgdedup"
    return UnsafeOperation(
        f"{what} is owned by {owner}, who could run code with your rights "
        f"through it; run pgdedup as {owner}, or have a superuser check the schema and give it to a role "
        "you trust (ALTER SCHEMA pgdedup OWNER TO ..., and the same for its objects)")


def revision(conn: psycopg.Connection) -> str | None:
    """The revision recorded in ``pgdedup.pgdedup_version``, or None when there is no schema.

    Raises:
        UnsafeOperation: the schema holds an object another role could use against this one
            (``check_owners``).
    """
    check_owners(conn)
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
