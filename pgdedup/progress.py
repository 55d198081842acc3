"""Stage lines for long commands: on stderr when it is a terminal, quiet when piped.

A command reports what it does itself (``Progress.line``), and relays the stages pgdedup's SQL
functions finish on the server (``Progress.server``): they ``RAISE INFO 'pgdedup: …'`` through
``pgdedup.stage`` while the setting ``pgdedup.progress`` is on, and INFO messages reach the
client whatever ``client_min_messages`` says.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg.errors import Diagnostic
from tqdm import tqdm

from .db import put_back_setting, swap_setting


class Bar(tqdm):  # type: ignore[type-arg]
    """A tqdm progress bar without tqdm's monitor thread (it only re-tunes how often a bar
    redraws): with that thread alive, a process starting workers would spawn them instead of
    forking them (``workers.starting``)."""

    monitor_interval = 0


class Progress:
    """Stage lines ``<label>: <what> (<seconds> s)``; ``enabled`` None means "stderr is a terminal"."""

    def __init__(self, label: str, enabled: bool | None = None) -> None:
        self.label = label
        self.on = sys.stderr.isatty() if enabled is None else enabled

    def line(self, text: str) -> None:
        if self.on:
            print(f"{self.label}: {text}", file=sys.stderr, flush=True)

    @contextmanager
    def stage(self, what: str) -> Iterator[None]:
        """One line for the work in the block, when it has finished."""
        started = time.perf_counter()
        yield
        self.line(f"{what} ({time.perf_counter() - started:.1f} s)")

    @contextmanager
    def server(self, conn: psycopg.Connection) -> Iterator[None]:
        """Relay the server's stage reports on ``conn`` for the block (in its current
        transaction: the setting is local to it, and put back as it was after the block)."""
        if not self.on:
            yield
            return

        def relay(diag: Diagnostic) -> None:
            if diag.severity_nonlocalized == "INFO" and (diag.message_primary or "").startswith("pgdedup: "):
                self.line(diag.message_primary.removeprefix("pgdedup: "))

        conn.add_notice_handler(relay)
        old = conn.execute(swap_setting("pgdedup.progress", "on")).fetchone()[0]
        try:
            yield
        finally:
            conn.remove_notice_handler(relay)
            if not conn.closed and conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS:
                conn.execute(put_back_setting("pgdedup.progress", old))
