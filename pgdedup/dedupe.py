"""``pgdedup dedupe``: decide which rows are near-duplicates of which kept row, in SQL.

The work happens in ``pgdedup.mark_duplicates`` / ``pgdedup.find_duplicates`` (sql/0002):
this module only calls them, so a psql user and a CLI user get exactly the same result.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .collections import get
from .db import connect
from .exact import verify_exact


@dataclass
class DedupeResult:
    """What a dedupe run found; ``summary()`` is the line the CLI prints."""

    name: str
    rows_examined: int
    duplicates: int
    groups: int
    seconds: float
    marked_in: str  # "table.column" for in-place marking, else the view name

    def summary(self) -> str:
        return (f"deduped {self.name}: {self.rows_examined} rows examined, {self.duplicates} duplicates "
                f"in {self.groups} groups, marked in {self.marked_in}, {self.seconds:.1f} s")


def dedupe(name: str, *, threshold: float | None = None, keep_order: str | None = None,
           column: str = "duplicate_of", alter: bool = True, max_bucket: int = 100,
           verify: str = "estimate", dsn: str | None = None) -> DedupeResult:
    """Mark near-duplicates of collection ``name``.

    ``alter=True`` adds/fills ``column`` in the source table (NULL = kept, else the kept row's key);
    ``alter=False`` leaves the source table alone and writes ``pgdedup.duplicates`` plus a view
    ``pgdedup."<name>_duplicates"`` of the source rows with their marks.
    ``keep_order`` is an ORDER BY list of source columns (e.g. ``"published_at, feed_item_id"``);
    the first row of a group in that order is kept. ``verify="exact"`` re-checks candidates
    with exact Jaccard from the source text first (see ``exact``). One transaction: all marks
    or none.
    """
    t0 = time.perf_counter()
    with connect(dsn) as conn:
        coll = get(conn, name)
        if verify == "exact":
            verify_exact(conn, coll, threshold, max_bucket)
        if alter:
            row = conn.execute("SELECT * FROM pgdedup.mark_duplicates(%s, %s, %s, %s, %s, %s)",
                               (name, threshold, keep_order, column, max_bucket, verify)).fetchone()
            where = f"{coll.source.label}.{column}"
        else:
            row = conn.execute("SELECT * FROM pgdedup.find_duplicates(%s, %s, %s, %s, %s)",
                               (name, threshold, keep_order, max_bucket, verify)).fetchone()
            where = conn.execute("SELECT pgdedup.create_duplicates_view(%s)", (name,)).fetchone()[0]
        conn.commit()
    return DedupeResult(name, row[0], row[1], row[2], time.perf_counter() - t0, where)
