"""Blocks of a table that some work read, from PostgreSQL's I/O statistics (pg_statio): the
tests of plans that went quadratic count reads instead of timing runs."""

from __future__ import annotations

import time
from collections.abc import Callable

import psycopg

from crashes import wait_for

HEAP = "heap_blks_hit + heap_blks_read"
INDEXES = "coalesce(idx_blks_hit + idx_blks_read, 0)"


def blocks_read_by(conn: psycopg.Connection, work: Callable[[], object], table: str, indexes: bool = True) -> int:
    """Blocks of ``table`` (its heap, and its indexes unless ``indexes`` is false) that ``work``
    read from the cache or not, on sessions of its own, which send their counts as they end:
    counted once the counts have settled. (``conn`` is in autocommit: each statement reads the
    counts afresh.)"""
    query = f"SELECT {HEAP}{' + ' + INDEXES if indexes else ''} FROM pg_statio_user_tables WHERE relid = %s::regclass"
    before = conn.execute(query, (table,)).fetchone()[0]
    work()
    wait_for(conn, f"SELECT ({query}) <> %s", (table, before), timeout=10)
    last = None
    while True:  # (the work's other sessions may still be sending theirs)
        now = conn.execute(query, (table,)).fetchone()[0]
        if now == last:
            return now - before
        last = now
        time.sleep(0.7)
