"""A simulated crash of ``pgdedup index`` midway, for the resume tests."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from psycopg import sql


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
