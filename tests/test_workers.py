"""How pgdedup starts its worker processes (``workers.starting``): forked by a process without
other threads, spawned by one with them; the same results either way, and a fork never touches
the caller's own database sessions, garbage or signal handling."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

import pgdedup
from test_index import _dump, _text_table
from test_safety import _gone, holding_workers


# Runs ``call`` (a statement, with ``dsn`` bound) in a fresh process, beside a second thread if
# asked, and prints the start method of every ``starting()`` block pgdedup entered: the test
# process itself may run threads that other tests left (Dask's), which make pgdedup spawn.
FRESH = r"""
import sys, threading
from contextlib import contextmanager
import pgdedup
from pgdedup import exact, loader, workers
if __name__ == "__main__":
    dsn, call, other_thread = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
    if other_thread:
        threading.Thread(target=threading.Event().wait, daemon=True).start()
    seen = []
    @contextmanager
    def recorded():
        with workers.starting() as ctx:
            seen.append(ctx.get_start_method())
            yield ctx
    loader.starting = exact.starting = recorded
    exec(call)
    print(" ".join(seen))
"""


def start_methods(dsn: str, call: str, other_thread: bool = False) -> list[str]:
    """The start methods pgdedup chose while ``call`` ran in a fresh process (``FRESH``)."""
    out = subprocess.run([sys.executable, "-c", FRESH, dsn, call, "1" if other_thread else "0"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()


RULE = r"""
import threading
from pgdedup.progress import Bar
from pgdedup.workers import starting
with Bar(total=1, disable=True):  # pgdedup's own progress bars start no thread
    with starting() as ctx:
        alone = ctx.get_start_method()
stop = threading.Event()
threading.Thread(target=stop.wait).start()
with starting() as ctx:
    crowded = ctx.get_start_method()
stop.set()
print(alone, crowded)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux only")
def test_workers_are_forked_only_by_a_process_without_other_threads():
    out = subprocess.run([sys.executable, "-c", RULE], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["fork", "spawn"]


def test_forked_and_spawned_workers_store_what_one_process_stores(conn, dsn):
    _text_table(conn, 300)
    pgdedup.index("t", "id", ["body"], name="one", dsn=dsn, workers=1, chunk_size=40, progress=False)
    call = 'pgdedup.index("t", "id", ["body"], name={!r}, dsn=dsn, workers=2, chunk_size=40, progress=False)'
    linux = sys.platform.startswith("linux")
    assert start_methods(dsn, call.format("forked")) == ["fork" if linux else "spawn"]
    assert start_methods(dsn, call.format("spawned"), other_thread=True) == ["spawn"]
    assert len(_dump(conn, "one")[0]) == 300
    assert _dump(conn, "one") == _dump(conn, "forked") == _dump(conn, "spawned")


# The caller has a session in use across the run. It also dropped, without closing, an object
# that shuts a duplicate of that session's socket down when it is finalised, in whatever process
# (as a connection of a driver without psycopg's pid check would end its session), and that
# waits in a reference cycle for the collector; every child collects garbage as it starts (as a
# library's fork hook may). The session must still answer after forked workers ran.
CALLER_GARBAGE = r"""
import gc, os, socket, sys, threading
import psycopg, pgdedup
if __name__ == "__main__":
    dsn = sys.argv[1]
    gc.disable()
    os.register_at_fork(after_in_child=gc.collect)
    mine = psycopg.connect(dsn, autocommit=True, application_name="caller")
    class Guardless:
        def __init__(self, fd):
            self.fd, self.me = os.dup(fd), self
        def __del__(self):
            socket.socket(fileno=self.fd).shutdown(socket.SHUT_RDWR)
    Guardless(mine.fileno())
    assert threading.active_count() == 1
    r = pgdedup.index("t", "id", ["body"], dsn=dsn, workers=2, chunk_size=40, progress=False)
    print(r.signed, mine.execute("SELECT 1").fetchone()[0])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux only")
def test_forked_workers_do_not_finalise_the_callers_garbage(conn, dsn):
    _text_table(conn, 300)
    out = subprocess.run([sys.executable, "-c", CALLER_GARBAGE, dsn], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["300", "1"]


# An application with graceful shutdown: a SIGTERM handler that notes its process and closes the
# app's session, and a signal wakeup fd (as asyncio sets). Ctrl-C stops its index while the
# workers are held inside their first COPY, so the run terminates them: that SIGTERM must end
# them, not run the app's handler in them (which would close the app's session on the server, and
# let the held workers run on) nor reach the app's wakeup fd.
CALLER_SIGNALS = r"""
import fcntl, os, signal, sys, threading
import psycopg, pgdedup
if __name__ == "__main__":
    dsn, notes = sys.argv[1:3]
    mine = psycopg.connect(dsn, autocommit=True, application_name="caller")
    def shutdown(signum, frame):
        with open(notes, "a") as f:
            f.write(f"{os.getpid()}\n")
        mine.close()
    signal.signal(signal.SIGTERM, shutdown)
    r, w = os.pipe()
    for fd in (r, w):
        fcntl.fcntl(fd, fcntl.F_SETFL, os.O_NONBLOCK)
    signal.set_wakeup_fd(w)
    assert threading.active_count() == 1
    try:
        pgdedup.index("docs", "id", ["body"], dsn=dsn, workers=2, chunk_size=100, progress=False)
    except KeyboardInterrupt:
        pass
    try:
        woken = os.read(r, 100)
    except BlockingIOError:
        woken = b""
    print(mine.execute("SELECT 1").fetchone()[0], signal.SIGTERM in woken)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux only")
def test_stopped_workers_do_not_run_the_callers_signal_handlers(conn, dsn, tmp_path):
    notes = tmp_path / "handled"
    app = [sys.executable, "-c", CALLER_SIGNALS, dsn, str(notes)]
    with holding_workers(conn, dsn, lambda: subprocess.Popen(app, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                             text=True, start_new_session=True)) as (run, held, _):
        os.kill(run.pid, signal.SIGINT)  # the app's process only
        out, err = run.communicate(timeout=30)
    assert run.returncode == 0, err[-2000:]
    assert out.split() == ["1", "False"]  # its session answers; no worker's SIGTERM reached its fd
    assert not notes.exists()  # the handler ran nowhere
    _gone(conn, run, held)
