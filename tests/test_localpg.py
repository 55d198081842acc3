"""The throwaway server (pgdedup.localpg) goes when the process that started it goes, however that
process ends: kill -9 and SIGTERM of a real process, not an exception raised in-process.
``keep()`` (``demo --keep``) is the one way to leave it running."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from pgdedup.localpg import find_bindir

pytestmark = pytest.mark.skipif(find_bindir() is None, reason="the watchdog guards servers from system binaries")

#: Starts a server, prints its directory and DSN, optionally keeps it, then waits to be killed.
STARTER = ("import sys, time; from pgdedup.localpg import LocalPostgres; pg = LocalPostgres(); pg.start(); "
           "pg.keep() if sys.argv[1] == 'keep' else None; print(pg.base, pg.dsn, pg.stop_command(), sep='\\n', flush=True); "
           "time.sleep(600)")


def _started(mode: str) -> tuple[subprocess.Popen, Path, str, str]:
    """A starter process, its server's directory, DSN and stop command (the server answers)."""
    proc = subprocess.Popen([sys.executable, "-c", STARTER, mode], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    base, dsn, stop = (proc.stdout.readline().strip() for _ in range(3))
    assert base and dsn and stop, "the starter printed its server"
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
    return proc, Path(base), dsn, stop


def _gone(base: Path, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not base.exists():
            return True
        time.sleep(0.2)
    return False


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_the_server_goes_with_the_process_that_started_it(sig):
    proc, base, dsn, _ = _started("stop")
    proc.send_signal(sig)
    proc.wait(timeout=30)
    assert _gone(base), f"{base} is still there after the starter got {sig.name}"
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(dsn, connect_timeout=5)


def test_a_kept_server_outlives_its_starter_until_stopped_by_its_command():
    proc, base, dsn, stop = _started("keep")
    try:
        proc.kill()
        proc.wait(timeout=30)
        time.sleep(1)  # a watchdog that would stop it has had time to
        with psycopg.connect(dsn) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        subprocess.run(stop, shell=True, check=True, capture_output=True)
    assert not base.exists()
