"""pgdedup's exceptions: one class per kind of failure a caller may want to handle.

SQL functions raise with pgdedup's own SQLSTATEs (class ``PD``); ``translated()`` turns those
(and permission errors) into these classes at the API boundary, so a Python caller can write
``except pgdedup.CollectionBusy`` instead of parsing messages. Every message is one line meant
for a user; the CLI prints it as ``pgdedup: error: <message>`` and exits 1.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg


class PgdedupError(Exception):
    """Base class: an error with a one-line message meant for the user."""


class CollectionNotFound(PgdedupError, LookupError):
    """No collection of that name (or none the current role may read). SQLSTATE PD001."""


class SourceMissing(PgdedupError, LookupError):
    """The collection's source table (or one of its columns) was renamed or dropped; the message
    says how to go on. SQLSTATE PD007."""


class SchemaMismatch(PgdedupError):
    """The pgdedup schema in the database is at another revision than this pgdedup works with;
    runtime commands never migrate an existing schema (``pgdedup migrate`` does)."""


class RowNotFound(PgdedupError, LookupError):
    """The collection has no row with that key. SQLSTATE PD002."""


class InvalidArgument(PgdedupError, ValueError):
    """A parameter is out of range or malformed; nothing was written. SQLSTATE PD003."""


class StaleResults(PgdedupError):
    """Stored results (e.g. exact pairs) were computed from an older index or for other
    parameters; the message says which command recomputes them. SQLSTATE PD004."""


class CollectionBusy(PgdedupError):
    """Another run holds the collection's lock (the message names it), or a table lock could not
    be had in time. SQLSTATE PD005."""


class UnsafeOperation(PgdedupError):
    """Refused because it could damage data (e.g. marking a column pgdedup does not own).
    SQLSTATE PD006."""


class PermissionDenied(PgdedupError):
    """The database refused the current role (SQLSTATE 42501)."""


class ConnectionFailed(PgdedupError):
    """The server could not be reached (libpq's reason in the message): a watcher retries."""


class PgdedupWarning(UserWarning):
    """Something pgdedup did or found that the user should know, while the run goes on; the CLI
    prints it as one line (``pgdedup: warning: …``)."""


class TrackingLost(PgdedupWarning):
    """A tracked collection's source no longer carries its triggers, enabled (the table was
    replaced or renamed, or its triggers disabled, since ``track``): writes since then were not
    queued. pgdedup stops tracking it (so index compares every row, and dedupe writes every mark
    that differs) and says so; ``pgdedup track NAME`` tracks it again."""


class StatisticsWarning(PgdedupWarning):
    """A pgdedup table was not ANALYZEd when pgdedup asked: its statistics do not cover the
    collection and the role is not granted ``pgdedup.analyze_as_owner`` (runs may be slow until
    the owner or autovacuum analyzes it), or another session held it past the lock wait (its
    statistics stay as they were). The message names the tables; the run goes on."""


_BY_SQLSTATE: dict[str, type[PgdedupError]] = {
    "PD001": CollectionNotFound, "PD002": RowNotFound, "PD003": InvalidArgument,
    "PD004": StaleResults, "PD005": CollectionBusy, "PD006": UnsafeOperation, "PD007": SourceMissing,
    "42501": PermissionDenied,
    "55P03": CollectionBusy,  # lock_not_available: a table lock not had within lock_timeout
}


def message_of(exc: BaseException) -> str:
    """The first line of a database error's primary message (or of ``str(exc)``), with the first
    line of its detail for an error whose message does not name what to do: a dependency
    ("cannot drop view … because other objects depend on it": the detail names them)."""
    diag = getattr(exc, "diag", None)
    text = (diag.message_primary if diag is not None and diag.message_primary else str(exc)).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    if diag is not None and diag.sqlstate == "2BP01" and diag.message_detail:
        first += f" ({diag.message_detail.strip().splitlines()[0]})"
    return first.removeprefix("pgdedup: ")


@contextmanager
def translated() -> Iterator[None]:
    """Re-raise database errors with a pgdedup SQLSTATE (or 42501) as the matching class.

    Errors wrapped by SQLAlchemy (migrations) are unwrapped first. Anything else passes through.
    """
    try:
        yield
    except Exception as exc:
        if isinstance(exc, PgdedupError):
            raise
        orig = exc if isinstance(exc, psycopg.Error) else getattr(exc, "orig", None)
        if isinstance(orig, psycopg.Error):
            cls = _BY_SQLSTATE.get(orig.sqlstate or "")
            if cls is not None:
                raise cls(message_of(orig)) from exc
        raise
