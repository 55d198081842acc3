"""What every worker process pgdedup starts needs (index's signers, dedupe's exact checkers).

Workers are forked when the process that starts them runs no other thread, and spawned
otherwise (``starting``). They never use a connection or lock of their parent (each opens its
own connections), ignore Ctrl-C (the parent handles it and stops them), and die with their
parent: a worker left running after its parent's ``kill -9`` would keep a database session and
its open transaction.
"""

from __future__ import annotations

import ctypes
import gc
import multiprocessing as mp
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.context import BaseContext


@contextmanager
def starting() -> Iterator[BaseContext]:
    """The multiprocessing context to start workers with inside the block: "fork" when this
    process runs no other thread (the CLI, a script), else "spawn" (an app with threads).

    Why: a spawned worker imports numpy, psycopg and the package anew, ~0.3 s of a 20,000-row
    index of ~2 s on two cores; a forked one starts with them imported. What a fork copies is
    why the rule: a lock another thread holds at that instant stays held forever in the child,
    so a process with threads gets spawned workers. The parent's open connections are copied
    too (the same sockets): a worker never uses them and ends with ``os._exit`` (as every
    multiprocessing child does), so no finaliser runs; and the parent's objects are frozen for
    the fork (``gc.freeze``), so a worker's garbage collector never frees an inherited, not yet
    collected connection, whose libpq finaliser would end the parent's session on the server.
    """
    if threading.active_count() > 1 or not hasattr(os, "fork"):
        yield mp.get_context("spawn")
        return
    gc.freeze()
    try:
        yield mp.get_context("fork")
    finally:
        gc.unfreeze()


def die_with_parent(parent: int) -> None:
    """Make this process get SIGKILL when its parent dies (Linux), stop now if it already has,
    and leave Ctrl-C to the parent."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
