"""Test harness: one real PostgreSQL per test session, one fresh database per test.

The server is ``PGDEDUP_TEST_DSN`` when set, else a throwaway cluster started by
``pgdedup.localpg.LocalPostgres`` (which runs initdb/postgres as the ``postgres`` user when the
suite runs as root, as CI does).
"""

from __future__ import annotations

import itertools
import os
import signal
from collections.abc import Callable, Iterator

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from pgdedup.localpg import LocalPostgres

_counter = itertools.count()

# A suite started in the background by a non-interactive shell (``pytest &``, some CI runners)
# inherits Ctrl-C as *ignored*, and so would every CLI process it starts (Python keeps an
# ignored SIGINT ignored): the Ctrl-C tests would then test nothing but that. Run as from a
# terminal, where Ctrl-C interrupts.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def server_dsn() -> Iterator[str]:
    explicit = os.environ.get("PGDEDUP_TEST_DSN")
    if explicit:
        yield explicit
        return
    with LocalPostgres() as pg:
        yield pg.dsn


def _scratch_database(server_dsn: str) -> Iterator[str]:
    """DSN of a new, empty database, dropped when the generator is closed."""
    name = f"pgdedup_test_{os.getpid()}_{next(_counter)}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield make_conninfo(server_dsn, dbname=name)
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


@pytest.fixture
def dsn(server_dsn: str) -> Iterator[str]:
    """DSN of a new, empty database, dropped after the test."""
    yield from _scratch_database(server_dsn)


@pytest.fixture
def second_dsn(server_dsn: str) -> Iterator[str]:
    """Another new, empty database on the same server (two installations side by side)."""
    yield from _scratch_database(server_dsn)


@pytest.fixture
def conn(dsn: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(dsn, autocommit=True) as c:
        yield c


@pytest.fixture
def make_role(conn, dsn) -> Iterator[Callable[..., tuple[str, str]]]:
    """``make_role(prefix, options)`` → (role name, DSN connecting as it); dropped after the test."""
    made: list[str] = []

    def make(prefix: str, options: str = "LOGIN") -> tuple[str, str]:
        name = f"{prefix}_{conn.info.dbname}"
        conn.execute(sql.SQL("CREATE ROLE {} " + options).format(sql.Identifier(name)))
        made.append(name)
        return name, make_conninfo(dsn, user=name)

    yield make
    for name in reversed(made):
        conn.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(name)))
        conn.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(name)))
