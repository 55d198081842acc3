"""pgdedup: near-duplicate rows of text inside PostgreSQL, with MinHash signatures and LSH bands.

The Python API mirrors the CLI: ``migrate``, ``index``, ``dedupe``, ``pairs``, ``similar``,
``status``, ``drop``, ``unmark``; ``sign_texts`` computes signatures without any database.
"""

from importlib.metadata import PackageNotFoundError, version as _version

from .errors import (CollectionBusy, CollectionNotFound, InvalidArgument, PermissionDenied, PgdedupError,
                     RowNotFound, SourceMissing, StaleResults, UnsafeOperation)
from .dedupe import DedupeResult, dedupe
from .lifecycle import drop, unmark
from .loader import IndexResult, index
from .migrate import downgrade, migrate
from .params import Params
from .queries import pairs, similar, status
from .signer import SignedChunk, sign_texts

__all__ = ["CollectionBusy", "CollectionNotFound", "DedupeResult", "IndexResult", "InvalidArgument", "Params",
           "PermissionDenied", "PgdedupError", "RowNotFound", "SignedChunk", "SourceMissing", "StaleResults", "UnsafeOperation",
           "dedupe", "downgrade", "drop", "index", "migrate", "pairs", "sign_texts", "similar", "status", "unmark"]

try:
    __version__ = _version("pgdedup")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
