"""Signing on a Dask cluster: ``pgdedup index … --scheduler ADDRESS``.

Signing is embarrassingly parallel, so a table too big for one machine's cores is signed by
the key-range tasks that ``--workers`` runs locally, sent to a Dask distributed scheduler
instead. Each task is ``loader.sign_range``, unchanged: it streams its key range from
PostgreSQL, signs it and COPYs signatures and band keys back, one transaction per chunk, each
of which first checks that the run's own session still holds the collection's lock. So:

* the stored rows are those of a local run, whatever the cluster (same code, same inputs);
* a failed task is simply run again (``RETRIES``), and a worker that dies mid-task has its task
  rescheduled by Dask: the rerun skips the chunks already committed (their stored md5 matches),
  and the chunk in flight was rolled back with the dead worker's connection;
* when the run stops (an error, Ctrl-C, kill -9 of the CLI) its lock goes with its session, and
  tasks still running on the cluster fail at their next chunk instead of writing.

Every worker needs pgdedup installed (``pip install 'pgdedup[dask]'``) and must reach the
database at the DSN the run uses: ``localhost`` means the worker's own machine.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import psycopg

from .errors import InvalidArgument, PgdedupError, message_of

if TYPE_CHECKING:
    from distributed import Client

    from .loader import RangeJob

#: How many times a task that raised is run again (a dead worker's task is rescheduled by Dask
#: on its own account, up to its ``distributed.scheduler.allowed-failures``).
RETRIES = 3
CONNECT_TIMEOUT = "15s"


@contextmanager
def connect(address: str) -> Iterator["Client"]:
    """A Dask client connected to the scheduler at ``address`` (``tcp://host:8786``), for one run.

    Called before the run writes anything, so a wrong address costs nothing.

    Raises:
        InvalidArgument: ``distributed`` is not installed, or ``address`` is empty.
        PgdedupError: the scheduler cannot be reached.
    """
    if not isinstance(address, str) or not address.strip():
        raise InvalidArgument(f"scheduler must be a Dask scheduler address such as tcp://host:8786, not {address!r}")
    try:
        from distributed import Client
    except ImportError:
        raise InvalidArgument("signing on a Dask cluster needs the distributed package: "
                              "pip install 'pgdedup[dask]'") from None
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise PgdedupError(f"cannot reach the Dask scheduler at {address}: {exc}") from None
    try:
        yield client
    finally:
        client.close()


def slots(client: "Client") -> int:
    """Threads across the cluster's workers now: the default number of key-range tasks."""
    return max(1, sum(client.nthreads().values()))


def _task(job: RangeJob, lo: str | None, hi: str | None, topic: str) -> int:
    """What runs on a Dask worker: one key range, with rows committed reported on ``topic``."""
    from distributed import get_worker

    from .loader import sign_range  # the loader imports this module
    worker = get_worker()
    try:
        return sign_range(job, lo, hi, lambda n: worker.log_event(topic, n))
    except psycopg.Error as exc:  # travels back as a plain pgdedup error: the driver's may not unpickle
        raise PgdedupError(message_of(exc)) from None


def sign_ranges(client: "Client", job: RangeJob, ranges: list[tuple[str | None, str | None]],
                report: Callable[[int], object]) -> int:
    """Sign key ranges as tasks on the cluster; ``report(n)`` hears of every chunk committed.

    Returns the rows signed, by every attempt (a chunk committed by a worker in the instant it
    was killed may go uncounted: its event died with it). The first task that fails for good stops the run: the other tasks
    are cancelled (those already running stop at their next chunk, once the lock is released).

    Raises:
        PgdedupError (or the task's own pgdedup error): a task failed ``RETRIES`` + 1 times.
    """
    from distributed import as_completed
    run = f"pgdedup-index-{job.collection_id}-{uuid.uuid4().hex[:12]}"
    client.subscribe_topic(run, lambda event: report(event[1]))
    futures = [client.submit(_task, job, lo, hi, run, key=f"{run}-{i}", retries=RETRIES, pure=False)
               for i, (lo, hi) in enumerate(ranges)]
    returned = 0
    try:
        for future in as_completed(futures, loop=client.loop):  # this client is not the default one
            if future.status == "error":
                exc = future.exception()
                raise exc if isinstance(exc, PgdedupError) else PgdedupError(
                    f"a signing task failed on the cluster: {exc}") from exc
            returned += future.result()
        # a task returns what its last attempt signed; the chunks of attempts that died count too,
        # and the scheduler has every chunk's event (a worker sends it before its task's result)
        reported = sum(n for _, n in client.get_events(run))
    finally:
        client.cancel(futures)
        client.unsubscribe_topic(run)
    return max(returned, reported)
