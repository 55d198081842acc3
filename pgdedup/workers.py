"""What every worker process pgdedup starts needs (index's signers, dedupe's exact checkers).

Workers are forked on Linux when the process that starts them runs no other thread, and
spawned otherwise (``starting``). They never use a connection or lock of their parent (each
opens its own connections), drop whatever signal handling they inherited and ignore Ctrl-C
(the parent handles it and stops them), and die with their parent: a worker left running
after its parent's ``kill -9`` would keep a database session and its open transaction.
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
    """The multiprocessing context to start workers with inside the block: "fork" on Linux when
    this process runs no other Python thread (the CLI, a script, a single-threaded asyncio app),
    else "spawn" (an app with threads; macOS and other systems).

    Why: a spawned worker imports numpy, psycopg and the package anew, ~0.3 s of a 20,000-row
    index of ~2 s on two cores; a forked one starts with them imported. What a fork copies
    sets the rules:

    - a lock another thread holds at that instant stays held forever in the child, hence no
      fork beside other threads. Threads that native libraries start outside ``threading``
      are not seen; OpenBLAS, numpy's, stops its own before a fork. A plain ``tqdm`` bar
      starts a monitor thread that outlives it, so pgdedup's bars are ``progress.Bar``;
    - the parent's open sockets, its connections' included: a worker never uses them. psycopg 3
      never closes a connection in a process other than the one that opened it, and the
      parent's objects are frozen for the fork (``gc.freeze``, unless the caller froze some
      itself), so a worker's garbage collector does not finalise the parent's uncollected
      garbage either (a connection of a driver without psycopg's guard would end the parent's
      session on the server);
    - signal handlers and the wakeup fd (asyncio's): ``die_with_parent`` resets them first;
    - Linux only, because only there does a worker die with its parent (``PR_SET_PDEATHSIG``):
      an orphan elsewhere would keep the parent's sockets, hence the dead run's session,
      transaction and lock, open.
    """
    if threading.active_count() > 1 or not sys.platform.startswith("linux"):
        yield mp.get_context("spawn")
        return
    freeze = gc.get_freeze_count() == 0  # (unfreeze would thaw what the caller froze too)
    if freeze:
        gc.freeze()
    try:
        yield mp.get_context("fork")
    finally:
        if freeze:
            gc.unfreeze()


def die_with_parent(parent: int) -> None:
    """First thing in a worker: get SIGKILL when the parent dies (Linux), stop now if it
    already has, drop the signal handlers and wakeup fd a fork inherited (the parent's own
    shutdown code must not run here, and a SIGTERM to this worker must end it, not wake the
    parent's event loop), and leave Ctrl-C to the parent."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)
    signal.set_wakeup_fd(-1)
    for sig in signal.valid_signals():
        if callable(signal.getsignal(sig)):
            signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
