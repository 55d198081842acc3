"""Run the ``pgdedup`` CLI in a real child process, as a user would."""

from __future__ import annotations

import os
import subprocess
import sys


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m pgdedup ARGS`` to completion (a hang fails the test after ``timeout`` s);
    stdout/stderr captured as text."""
    return subprocess.run([sys.executable, "-m", "pgdedup", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=timeout)


def cli_background(*args: str) -> subprocess.Popen:
    """``python -m pgdedup ARGS`` started and left running (for concurrency and kill tests), in a
    process group of its own, so a signal can go to the whole group as a terminal's Ctrl-C does."""
    return subprocess.Popen([sys.executable, "-m", "pgdedup", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def one_line_error(proc: subprocess.CompletedProcess, *fragments: str) -> str:
    """Assert the CLI failed the way README promises (exit 1, one stderr line ``pgdedup: error: …``
    containing every fragment); returns that line."""
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pgdedup: error: "), proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]
