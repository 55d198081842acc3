"""Crashes and waits for the kill and concurrency tests: a simulated crash of ``pgdedup index``
midway (for the resume tests), and waiting on the server for a state another process reaches."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import sql


def wait_for(conn: psycopg.Connection, predicate_sql: str, params: tuple = (), timeout: float = 30.0,
             run: subprocess.Popen | None = None) -> None:
    """Poll the server until ``predicate_sql`` is true (e.g. a session is waiting on a lock);
    with ``run``, fail at once (with its output) if that child process ends first."""
    deadline = time.monotonic() + timeout
    while not conn.execute(predicate_sql, params).fetchone()[0]:
        if run is not None and run.poll() is not None:
            raise AssertionError(f"the process ended first: {run.communicate()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for: {predicate_sql}")
        time.sleep(0.05)


@contextmanager
def signatures_fail_after(conn: psycopg.Connection, rows: int) -> Iterator[None]:
    """Inside the block, an INSERT into ``pgdedup.signatures`` raises 'simulated crash' once the
    table holds ``rows`` rows: a load dies in the chunk that reaches them, after the chunks
    before it committed. A real trigger on the real table (no mock); dropped on leaving."""
    conn.execute(sql.SQL("""CREATE FUNCTION public.pgdedup_test_crash() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF (SELECT count(*) FROM pgdedup.signatures) >= {} THEN RAISE EXCEPTION 'simulated crash'; END IF;
        RETURN NEW; END $$""").format(sql.Literal(rows)))
    conn.execute("CREATE TRIGGER crash BEFORE INSERT ON pgdedup.signatures "
                 "FOR EACH ROW EXECUTE FUNCTION public.pgdedup_test_crash()")
    try:
        yield
    finally:
        conn.execute("DROP TRIGGER crash ON pgdedup.signatures")
        conn.execute("DROP FUNCTION public.pgdedup_test_crash()")
