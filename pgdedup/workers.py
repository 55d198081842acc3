"""What every worker process pgdedup spawns needs (index's signers, dedupe's exact checkers).

Workers are spawned, never forked (no connection or lock crosses into them), ignore Ctrl-C
(the parent handles it and stops them), and die with their parent: a worker left running after
its parent's ``kill -9`` would keep a database session and its open transaction.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys


def die_with_parent(parent: int) -> None:
    """Make this process get SIGKILL when its parent dies (Linux), stop now if it already has,
    and leave Ctrl-C to the parent."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
