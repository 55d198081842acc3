"""pgdedup: near-duplicate rows of text inside PostgreSQL, with MinHash signatures and LSH bands.

The Python API mirrors the CLI: ``migrate``, ``index``, ``dedupe``, ``pairs``, ``similar``,
``status``, ``explain``, ``report``, ``drop``, ``unmark``; ``sign_texts`` computes signatures without any database.
"""

from importlib.metadata import PackageNotFoundError, version as _version

from .errors import (CollectionBusy, CollectionNotFound, ConnectionFailed, InvalidArgument, PermissionDenied,
                     PgdedupError, PgdedupWarning, RowNotFound, SchemaMismatch, SourceMissing, StaleResults,
                     StatisticsWarning, TrackingLost, UnsafeOperation)
from .dedupe import DedupeResult, dedupe
from .explain import Explanation, explain
from .handle import CollectionHandle, collection
from .lifecycle import drop, unmark
from .loader import IndexResult, index
from .params import Params
from .queries import pairs, similar, status
from .report import ReportResult, report
from .signer import SignedChunk, sign_texts
from .tracking import track
from .watch import watch

__all__ = ["CollectionBusy", "CollectionHandle", "CollectionNotFound", "ConnectionFailed", "DedupeResult", "Explanation",
           "IndexResult", "InvalidArgument", "Params", "PermissionDenied", "PgdedupError", "PgdedupWarning",
           "ReportResult", "RowNotFound", "SchemaMismatch", "SignedChunk", "SourceMissing", "StaleResults",
           "StatisticsWarning", "TrackingLost", "UnsafeOperation",
           "collection", "dedupe", "downgrade", "drop", "explain", "index", "migrate", "pairs", "report", "sign_texts",
           "similar", "status", "track", "unmark", "watch"]



def __getattr__(name: str) -> object:
    """``migrate`` and ``downgrade`` load alembic and SQLAlchemy (~0.3 s) only when first used."""
    if name in ("migrate", "downgrade"):
        from . import alembic_ops
        return getattr(alembic_ops, name)
    raise AttributeError(f"module 'pgdedup' has no attribute {name!r}")


try:
    __version__ = _version("pgdedup")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
