"""``pgdedup drop`` and ``pgdedup unmark``: end a collection, or take its marks back.

Both are thin calls of SQL functions (sql/0004: ``pgdedup.drop_collection``,
``pgdedup.unmark``), so psql users get the same behaviour. Each takes the collection's lock
first, like every other writer, and fails at once while another run holds it.
"""

from __future__ import annotations

from . import tracking
from .collections import get
from .connection import Db, session
from .errors import translated


def drop(name: str, *, unmark: bool = False, dsn: Db = None) -> int:
    """Forget collection ``name``: its signatures, band keys, results, runs and non-invasive view.

    The source table's rows are never touched. Its marking column keeps its marks unless
    ``unmark`` is true, which sets every mark to NULL first (the column itself stays: it is part
    of the user's table, and dropping a column is a schema change for the application to make).
    Returns the number of rows (signatures) forgotten. A tracked collection's triggers are
    removed first, in a short transaction of their own: ``DROP TRIGGER`` holds the table's
    ACCESS EXCLUSIVE lock until commit, and forgetting a large collection takes a while. What
    the drop refuses (an object that depends on the collection's view; with ``unmark``, a
    marking column that is not where pgdedup marked) is checked before that transaction; if the
    drop fails anyway, tracking is started again before the error is raised.

    Raises:
        CollectionNotFound: no such collection.
        CollectionBusy: another run (index, dedupe, ...) holds the collection.
        UnsafeOperation: ``unmark`` and reading the marking column (or the key) could run
            another role's code (``db.check_source``); or the column is not pgdedup's, or
            pgdedup's marks are in a column renamed since.
        SourceMissing: ``unmark`` and the source table was renamed (its marks stay there).
        psycopg.errors.DependentObjectsStillExist: an object depends on the collection's view.
    """
    with translated(), session(dsn, f"pgdedup drop {name}") as s:
        coll = get(s.conn, name)
        untracked = coll.tracked and s.owned  # (on a caller's connection: one transaction anyway)
        if untracked:  # DROP TRIGGER locks the table (ACCESS EXCLUSIVE) to commit: a moment only
            # what the drop would refuse (a view on the collection's view, unmark's checks) is
            # refused here, before tracking stops: tracking started again queues "compare every row"
            s.conn.execute("SELECT pgdedup.check_drop(%s, %s)", (name, unmark))
            tracking.set_triggers(s.conn, coll, False)
            s.commit()
        try:
            forgotten = s.conn.execute("SELECT pgdedup.drop_collection(%s, %s)", (name, unmark)).fetchone()[0]
            s.commit()
        except Exception:
            if untracked:  # the collection stays: so does its tracking (the next index compares every row)
                s.conn.rollback()
                tracking.set_triggers(s.conn, coll, True)
                s.commit()
            raise
    return forgotten


def unmark(name: str, *, dsn: Db = None) -> int:
    """Clear the marking column of collection ``name`` (every mark set to NULL, one transaction).

    The column stays and stays recorded as the collection's, so a later ``dedupe`` fills it
    again. Returns the number of rows cleared (0 when the collection never marked in place).

    Raises:
        CollectionNotFound: no such collection.
        CollectionBusy: another run holds the collection.
        UnsafeOperation: reading the marking column (or the key) could run another role's code
            (``db.check_source``), or the column is not the one pgdedup marked, or pgdedup's
            marks are in a column renamed since.
        SourceMissing: the source table was renamed (the marks stay in it: nothing is cleared).
    """
    with translated(), session(dsn, f"pgdedup unmark {name}") as s:
        get(s.conn, name)
        cleared = s.conn.execute("SELECT pgdedup.unmark(%s)", (name,)).fetchone()[0]
        s.commit()
    return cleared
