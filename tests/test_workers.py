"""How pgdedup starts its worker processes (``workers.starting``): forked by a process without
other threads, spawned by one with them; the same results either way, and a fork never touches
the caller's own database sessions."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pgdedup
from test_index import _dump, _text


@contextmanager
def _another_thread() -> Iterator[None]:
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


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


def test_workers_are_forked_only_by_a_process_without_other_threads():
    out = subprocess.run([sys.executable, "-c", RULE], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["fork", "spawn"]


def test_forked_and_spawned_workers_store_what_one_process_stores(conn, dsn):
    conn.execute("CREATE TABLE t (id int PRIMARY KEY, body text)")
    conn.cursor().executemany("INSERT INTO t VALUES (%s, %s)", [(i, _text(i)) for i in range(300)])
    pgdedup.index("t", "id", ["body"], name="one", dsn=dsn, workers=1, chunk_size=40, progress=False)
    assert threading.active_count() == 1  # so these two fork
    pgdedup.index("t", "id", ["body"], name="forked", dsn=dsn, workers=2, chunk_size=40, progress=False)
    with _another_thread():
        pgdedup.index("t", "id", ["body"], name="spawned", dsn=dsn, workers=2, chunk_size=40, progress=False)
    assert len(_dump(conn, "one")[0]) == 300
    assert _dump(conn, "one") == _dump(conn, "forked") == _dump(conn, "spawned")


# The caller has a session in use across the run, and another one it no longer references but
# has not collected yet (a reference cycle), and every child collects garbage as it starts (as a
# library's fork hook may). Both sessions must be open and usable after forked workers ran.
CALLER = r"""
import gc, os, sys, threading, weakref
import psycopg, pgdedup
if __name__ == "__main__":
    dsn = sys.argv[1]
    gc.disable()
    os.register_at_fork(after_in_child=gc.collect)
    mine = psycopg.connect(dsn, autocommit=True, application_name="caller")
    class Cycle:
        pass
    c = Cycle()
    c.me, c.conn = c, psycopg.connect(dsn, autocommit=True, application_name="cycle")
    ref = weakref.ref(c)
    del c
    assert threading.active_count() == 1
    r = pgdedup.index("t", "id", ["body"], dsn=dsn, workers=2, chunk_size=40, progress=False)
    print(r.signed, mine.execute("SELECT 1").fetchone()[0], ref().conn.execute("SELECT 2").fetchone()[0])
"""


def test_forked_workers_leave_the_callers_sessions_open(conn, dsn):
    conn.execute("CREATE TABLE t (id int PRIMARY KEY, body text)")
    conn.cursor().executemany("INSERT INTO t VALUES (%s, %s)", [(i, _text(i)) for i in range(300)])
    out = subprocess.run([sys.executable, "-c", CALLER, dsn], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["300", "1", "2"]
