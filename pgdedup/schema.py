"""Where pgdedup's schema stands, without importing alembic (which ``migrate`` needs).

``require_head`` is what runtime commands call: they upgrade the schema only when it is behind
(which needs CREATE on the database, or on the ``pgdedup`` schema), so a role that cannot create
anything can still index and dedupe once the schema is at head.
"""

from __future__ import annotations

import psycopg

SCHEMA = "pgdedup"
VERSION_TABLE = "pgdedup_version"
#: The newest revision in ``migrations/versions`` (a test checks it against alembic's head).
HEAD = "0006_living"


def revision(conn: psycopg.Connection) -> str | None:
    """The revision recorded in ``pgdedup.pgdedup_version``, or None when there is no schema."""
    if not conn.execute("SELECT pg_catalog.to_regclass('pgdedup.pgdedup_version') IS NOT NULL").fetchone()[0]:
        return None
    row = conn.execute("SELECT version_num FROM pgdedup.pgdedup_version").fetchone()
    return row[0] if row else None


def require_head(conn: psycopg.Connection, dsn: str) -> None:
    """Upgrade the schema on ``dsn`` to head when ``conn`` sees it behind; otherwise do nothing.

    Raises:
        PermissionDenied: the schema is behind and the role may not create it.
    """
    if revision(conn) != HEAD:
        from .alembic_ops import migrate  # alembic is imported only when a migration runs
        migrate(dsn)
