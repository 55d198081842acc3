"""The living-collection path (track, index from the queue, incremental dedupe) against full runs.

    python bench/incremental.py [--rows 100000,1000000] [--repeats 3] [--trigger-repeats 5] [--dsn DSN]
    python bench/incremental.py --rows 20000 --repeats 2          # a quick run (~1 minute)

Without ``--dsn`` a throwaway LocalPostgres (fsync off) is started and stopped. With ``--dsn``,
use a scratch database: tables ``feed_items``, ``feed_items_copy``, ``trigger_src``,
``bench_marks`` and the schema ``pgdedup`` are DROPPED.

Table 1, for each size N: a ``feed_items`` table of N rows from ``pgdedup.sample.load`` (uuid
keys; title, summary and ~3 KB of content; 15 % re-fetched copies and 15 % edited versions of
earlier stories, so ~20 % of the rows end up marked). Set-up, timed once: ``pgdedup.index`` of
title, summary, content (workers=None: one per core), ``pgdedup.track``, ``pgdedup.index(name)``
(the catch-up run after ``track``: it compares every row once), a full ``pgdedup.dedupe``
(keep order ``published_at, feed_item_id``), then one VACUUM ANALYZE of the source and the
pgdedup tables (a production table has autovacuum; this makes runs repeatable).
Then, ``--repeats`` times, a change batch committed in one transaction by a plain psycopg
connection, as an application would write it (one statement per row: the triggers fire per
statement):

* 1,000 new rows: 667 fresh rows (``sample.generate`` with another seed, published after every
  existing row: its usual mix, so a dozen are briefs carrying one of the boilerplate texts that
  thousands of rows share, i.e. they join LSH buckets capped at ``max_bucket``) and 333
  near-copies of random existing stories (half the same text plus an "Updated at" line, half
  0.5-1.5 % of the words replaced); a third of the near-copies are dated up to an hour
  *before* their original, so they become the new keepers of its group;
* 100 text updates of random existing stories (half 1 %, half 8 % of the words replaced);
* 100 deletes of random existing stories.

Timed per batch: ``pgdedup.index(name)`` (queue mode: only the queued keys are read),
``pgdedup.dedupe(name, keep_order=...)`` (it must report kind "incremental"; rows re-examined is
its ``rows_examined``, texts re-walked comes from its ``pgdedup.runs`` stats), then in the same
run a full ``pgdedup.dedupe(..., full=True)``. The marks (``duplicate_of``) are copied aside
after the incremental run and compared with those after the full run ("identical": no row's
mark differs; "marks differ" counts the rows). Wall seconds of each call (connections and checks included); median
and min-max over the repeats. speed-up = full dedupe / (index + incremental dedupe), per batch.

Table 2, the cost of the tracking triggers for writers: 10,000 generated rows (a staging table,
``INSERT ... SELECT`` so that only server work is timed) inserted into ``feed_items_copy`` (an
empty table shaped like ``feed_items``, TRUNCATEd before each measurement) in one statement and in
100 statements of 100 rows (autocommit: each its own transaction), with and without
``pgdedup.track``; the order alternates between repeats; median and min-max of ``--trigger-repeats``.

Table 3, where the time goes: one extra change batch per size, not in table 1, run with
``track_functions = pl`` (set through PGOPTIONS for pgdedup's own connections; needs a superuser),
so ``pg_stat_user_functions`` gives the calls, total and self time of every plpgsql function of
pgdedup during the queue index, the incremental dedupe and the full dedupe ("self" excludes
the time in the other functions listed, e.g. ``similarity``, the plpgsql signature comparison),
plus the ``stats`` jsonb of the ``pgdedup.runs`` rows those calls wrote.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar

import psycopg
from psycopg import sql

import pgdedup
from pgdedup import sample
from pgdedup.localpg import LocalPostgres

from index_bench import machine_info  # bench/ is on sys.path when this file is run as a script
from speed import table

NAME, KEY = "feed_items", "feed_item_id"
TEXT_COLUMNS = ["title", "summary", "content"]
KEEP_ORDER = "published_at, feed_item_id"
SEED = 42
NEW_ROWS, UPDATES, DELETES = 1000, 100, 100
COPY_SHARE, EARLIER_SHARE = 1 / 3, 1 / 3  # of the new rows; of those near-copies
TRIGGER_ROWS, TRIGGER_STATEMENT_ROWS = 10_000, 100
TARGET_ROWS, TARGET_SECONDS, TARGET_SPEEDUP = 1_000_000, 5.0, 20.0
PROFILE_OPTIONS = "-c track_functions=pl"
T = TypeVar("T")


def timed(call: Callable[[], T]) -> tuple[float, T]:
    t0 = time.perf_counter()
    value = call()
    return time.perf_counter() - t0, value


def spread(values: list[float], fmt: str = "{:.2f}") -> str:
    """'median (min-max)', or the one value."""
    if len(values) == 1:
        return fmt.format(values[0])
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def log(message: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# The change batch ---------------------------------------------------------------------------------

def replace_words(text: str, rate: float, rng: random.Random) -> str:
    """``text`` with ``rate`` of its words replaced by other words of the same text."""
    words = text.split(" ")
    for _ in range(max(1, round(rate * len(words)))):
        words[rng.randrange(len(words))] = words[rng.randrange(len(words))]
    return " ".join(words)


def near_copy(row: tuple, rng: random.Random, earlier: bool, latest: datetime) -> tuple:
    """A near-duplicate of source row ``row`` (``sample.COLUMNS`` order) under a new key: dated
    before the original when ``earlier`` (so it becomes its group's keeper), else after ``latest``."""
    values = dict(zip(sample.COLUMNS, row))
    if rng.random() < 0.5:
        content = f"{values['content']}\n\nUpdated at {rng.randrange(24):02d}:{rng.randrange(60):02d}"
    else:
        content = replace_words(values["content"], rng.uniform(0.005, 0.015), rng)
    when = (values["published_at"] - timedelta(seconds=rng.randrange(60, 3600)) if earlier
            else latest + timedelta(seconds=rng.randrange(1, 3600)))
    values.update(feed_item_id=uuid.UUID(int=rng.getrandbits(128)), content=content, published_at=when,
                  link=f"{values['link']}?utm_source=bench{rng.getrandbits(16)}")
    return tuple(values[c] for c in sample.COLUMNS)


@dataclass
class Stories:
    """Keys of the table's longer stories (>= 1,000 characters of content), the pool the batches
    copy, update and delete from; deleted keys leave it."""

    keys: list[uuid.UUID]
    seed: int
    batches: int = 0
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    @classmethod
    def of(cls, conn: psycopg.Connection, seed: int) -> "Stories":
        keys = [r[0] for r in conn.execute(
            f"SELECT {KEY} FROM {NAME} WHERE length(content) >= 1000 ORDER BY {KEY}")]
        return cls(keys, seed)

    def apply_batch(self, conn: psycopg.Connection) -> dict[str, float]:
        """Write one change batch in one transaction (one statement per row, as an application
        would); returns the counts and the seconds it took to write and commit."""
        rng, self.batches = self.rng, self.batches + 1
        copies = round(NEW_ROWS * COPY_SHARE)
        picked = rng.sample(self.keys, copies + UPDATES + DELETES)
        copy_keys, update_keys, delete_keys = picked[:copies], picked[copies:copies + UPDATES], picked[copies + UPDATES:]
        latest = conn.execute(f"SELECT max(published_at) FROM {NAME}").fetchone()[0]
        originals = conn.execute(
            sql.SQL("SELECT {} FROM {} WHERE {} = ANY(%s) ORDER BY {}").format(
                sql.SQL(", ").join(map(sql.Identifier, sample.COLUMNS)), sql.Identifier(NAME),
                sql.Identifier(KEY), sql.Identifier(KEY)), (copy_keys,)).fetchall()
        earlier = round(copies * EARLIER_SHARE)
        rows = [near_copy(r, rng, i < earlier, latest) for i, r in enumerate(originals)]
        shift = latest - datetime(2024, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=1)
        for r in sample.generate(NEW_ROWS - copies, seed=1000 * self.seed + self.batches):
            rows.append(r[:-1] + (r[-1] + shift,))  # published_at is the last column
        rng.shuffle(rows)
        old_text = dict(conn.execute(f"SELECT {KEY}, content FROM {NAME} WHERE {KEY} = ANY(%s)", (update_keys,)).fetchall())
        updates = [(replace_words(old_text[k], 0.01 if i % 2 else 0.08, rng), k) for i, k in enumerate(update_keys)]
        conn.commit()
        insert = sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
            sql.Identifier(NAME), sql.SQL(", ").join(map(sql.Identifier, sample.COLUMNS)),
            sql.SQL(", ").join(sql.Placeholder() * len(sample.COLUMNS)))
        t0 = time.perf_counter()
        with conn.transaction(), conn.cursor() as cur:
            cur.executemany(insert, rows)
            cur.executemany(f"UPDATE {NAME} SET content = %s WHERE {KEY} = %s", updates)
            cur.execute(f"DELETE FROM {NAME} WHERE {KEY} = ANY(%s)", (delete_keys,))
        seconds = time.perf_counter() - t0
        gone = set(delete_keys)
        self.keys = [k for k in self.keys if k not in gone]
        return {"write_s": seconds, "inserted": len(rows), "keeper_copies": earlier}


# Table 1: a batch through index + incremental dedupe, against a full dedupe -------------------------

@dataclass
class Batch:
    """The measurements of one change batch."""

    write_s: float
    index_s: float
    queued: int
    dedupe_s: float
    kind: str
    rows_examined: int
    texts: int
    full_s: float
    differing: int
    pending: int
    duplicates: int

    @property
    def living_s(self) -> float:
        return self.index_s + self.dedupe_s

    @property
    def speedup(self) -> float:
        return self.full_s / self.living_s


@dataclass
class SizeResult:
    rows: int
    setup: dict[str, str] = field(default_factory=dict)
    batches: list[Batch] = field(default_factory=list)
    profile: dict[str, Any] = field(default_factory=dict)


def reset(conn: psycopg.Connection) -> None:
    for t in ("feed_items", "feed_items_copy", "trigger_src", "bench_marks"):
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(t)))
    conn.execute("DROP SCHEMA IF EXISTS pgdedup CASCADE")


def set_up(conn: psycopg.Connection, dsn: str, n: int) -> dict[str, str]:
    """Load, index, track, catch up and dedupe n rows in full; the timings as strings."""
    out: dict[str, str] = {}
    reset(conn)
    seconds, _ = timed(lambda: sample.load(conn, n, NAME, seed=SEED))
    out["load s (generate + COPY)"] = f"{seconds:.1f}"
    size = conn.execute("SELECT pg_total_relation_size(%s)", (NAME,)).fetchone()[0]
    out["source table MB"] = f"{size / 2**20:,.0f}"
    log(f"{n:,} rows loaded in {seconds:.0f} s; indexing")
    seconds, r = timed(lambda: pgdedup.index(NAME, KEY, TEXT_COLUMNS, dsn=dsn, workers=None, progress=False))
    out["first index s"] = f"{seconds:.1f} ({r.signed / seconds:,.0f} rows/s)"
    seconds, _ = timed(lambda: pgdedup.track(NAME, dsn=dsn))
    out["track s"] = f"{seconds:.2f}"
    log("tracking; catch-up index")
    seconds, r = timed(lambda: pgdedup.index(NAME, dsn=dsn, workers=None, progress=False))
    out["catch-up index s (compares every row)"] = f"{seconds:.1f} ({r.signed} signed)"
    log("first full dedupe")
    seconds, d = timed(lambda: pgdedup.dedupe(NAME, keep_order=KEEP_ORDER, dsn=dsn))
    out["first full dedupe s"] = f"{seconds:.1f}"
    out["duplicates marked"] = f"{d.duplicates:,} in {d.groups:,} groups"
    seconds, _ = timed(lambda: [conn.execute(f"VACUUM (ANALYZE) {t}") for t in
                                (NAME, "pgdedup.signatures", "pgdedup.band_keys", "pgdedup.duplicates")])
    out["VACUUM ANALYZE s (not in the figures)"] = f"{seconds:.1f}"
    return out


def save_marks(conn: psycopg.Connection) -> None:
    conn.execute("DROP TABLE IF EXISTS bench_marks")
    conn.execute(f"CREATE UNLOGGED TABLE bench_marks AS SELECT {KEY}, duplicate_of FROM {NAME}")


def differing_marks(conn: psycopg.Connection) -> int:
    """Rows whose mark now differs from the one saved by ``save_marks`` (or that only one side has)."""
    return conn.execute(
        f"SELECT count(*) FROM {NAME} f FULL JOIN bench_marks b USING ({KEY}) "
        "WHERE f.duplicate_of IS DISTINCT FROM b.duplicate_of OR f.ctid IS NULL OR b.ctid IS NULL").fetchone()[0]


def last_runs(conn: psycopg.Connection, count: int) -> list[tuple[str, dict]]:
    """(kind, stats) of the collection's last ``count`` runs, oldest first."""
    rows = conn.execute("SELECT kind, stats FROM pgdedup.runs WHERE collection_id = pgdedup.collection_id(%s) "
                        "ORDER BY run_id DESC LIMIT %s", (NAME, count)).fetchall()
    return list(reversed(rows))


def one_batch(conn: psycopg.Connection, dsn: str, stories: Stories) -> Batch:
    written = stories.apply_batch(conn)
    index_s, ir = timed(lambda: pgdedup.index(NAME, dsn=dsn, workers=None, progress=False))
    dedupe_s, dr = timed(lambda: pgdedup.dedupe(NAME, keep_order=KEEP_ORDER, dsn=dsn))
    texts = last_runs(conn, 1)[0][1].get("texts", -1)
    pending = conn.execute("SELECT count(*) FROM pgdedup.pending WHERE collection = %s", (NAME,)).fetchone()[0]
    save_marks(conn)
    conn.commit()
    full_s, fr = timed(lambda: pgdedup.dedupe(NAME, keep_order=KEEP_ORDER, full=True, dsn=dsn))
    differing = differing_marks(conn)
    conn.commit()
    if fr.kind != "full" or fr.duplicates != dr.duplicates:
        log(f"full run: kind {fr.kind}, {fr.duplicates} duplicates (incremental: {dr.duplicates})")
    return Batch(written["write_s"], index_s, ir.queued or 0, dedupe_s, dr.kind, dr.rows_examined, texts,
                 full_s, differing, pending, dr.duplicates)


def batch_rows(result: SizeResult) -> dict[str, str]:
    b = result.batches
    kinds = sorted({x.kind for x in b})
    identical = sum(x.differing == 0 for x in b)
    out = {
        "batch write s (client, one transaction)": spread([x.write_s for x in b]),
        "queue entries per batch": spread([x.queued for x in b], "{:,.0f}"),
        "index from queue s": spread([x.index_s for x in b]),
        f"dedupe s ({'/'.join(kinds)})": spread([x.dedupe_s for x in b]),
        "rows re-examined": spread([x.rows_examined for x in b], "{:,.0f}"),
        "texts re-walked": spread([x.texts for x in b], "{:,.0f}"),
        "index + dedupe s": spread([x.living_s for x in b]),
        "full dedupe s (same run)": spread([x.full_s for x in b]),
        "speed-up: full / (index + dedupe)": spread([x.speedup for x in b], "{:.1f}×"),
        "pending after dedupe": spread([x.pending for x in b], "{:,.0f}"),
        "marks identical to the full run": ("yes" if identical == len(b) else "NO") + f" ({identical}/{len(b)}"
                                           + (f"; {max(x.differing for x in b)} rows differ)" if identical < len(b) else ")"),
    }
    if result.rows == TARGET_ROWS:
        living, speedup = statistics.median(x.living_s for x in b), statistics.median(x.speedup for x in b)
        out[f"target index + dedupe ≤ {TARGET_SECONDS:.0f} s"] = "met" if living <= TARGET_SECONDS else "MISSED"
        out[f"target speed-up ≥ {TARGET_SPEEDUP:.0f}×"] = "met" if speedup >= TARGET_SPEEDUP else "MISSED"
    return out


# Table 3: where the time goes ----------------------------------------------------------------------

@contextmanager
def profiled_connections() -> Iterator[None]:
    """pgdedup's connections opened inside get ``track_functions = pl`` (through PGOPTIONS)."""
    before = os.environ.get("PGOPTIONS")
    os.environ["PGOPTIONS"] = f"{before or ''} {PROFILE_OPTIONS}".strip()
    try:
        yield
    finally:
        if before is None:
            del os.environ["PGOPTIONS"]
        else:
            os.environ["PGOPTIONS"] = before


def function_stats(conn: psycopg.Connection) -> dict[str, tuple[int, float, float]]:
    """(calls, total ms, self ms) of every tracked pgdedup function, by signature."""
    time.sleep(0.5)  # a closed session flushes its counters as its backend exits
    conn.execute("SELECT pg_stat_clear_snapshot()")
    rows = conn.execute("SELECT funcid::regprocedure::text, calls, total_time, self_time FROM pg_stat_user_functions "
                        "WHERE schemaname = 'pgdedup'").fetchall()
    conn.commit()
    return {r[0].removeprefix("pgdedup."): (r[1], r[2], r[3]) for r in rows}


def stats_delta(after: dict[str, tuple[int, float, float]],
                before: dict[str, tuple[int, float, float]]) -> list[tuple[str, int, float, float]]:
    out = []
    for name, (calls, total, own) in after.items():
        c0, t0, s0 = before.get(name, (0, 0.0, 0.0))
        if calls > c0:
            out.append((name, calls - c0, total - t0, own - s0))
    return sorted(out, key=lambda r: -r[2])


def profile_batch(conn: psycopg.Connection, dsn: str, stories: Stories) -> dict[str, Any]:
    """One more batch, with function timing on; what each step spent in which function."""
    if not conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()[0]:
        conn.commit()
        return {"skipped": "track_functions needs a superuser"}
    conn.commit()
    stories.apply_batch(conn)
    out: dict[str, Any] = {}
    with profiled_connections():
        s0 = function_stats(conn)
        index_s, _ = timed(lambda: pgdedup.index(NAME, dsn=dsn, workers=None, progress=False))
        s1 = function_stats(conn)
        dedupe_s, _ = timed(lambda: pgdedup.dedupe(NAME, keep_order=KEEP_ORDER, dsn=dsn))
        s2 = function_stats(conn)
        full_s, _ = timed(lambda: pgdedup.dedupe(NAME, keep_order=KEEP_ORDER, full=True, dsn=dsn))
        s3 = function_stats(conn)
    out["steps"] = [("index from queue", index_s, stats_delta(s1, s0)),
                    ("incremental dedupe", dedupe_s, stats_delta(s2, s1)),
                    ("full dedupe", full_s, stats_delta(s3, s2))]
    out["runs"] = last_runs(conn, 3)
    conn.commit()
    return out


def print_profile(result: SizeResult) -> None:
    p = result.profile
    print(f"\n{result.rows:,} rows, one more batch with track_functions = pl (timing overhead included):")
    if "skipped" in p:
        print(f"  skipped: {p['skipped']}")
        return
    for step, seconds, funcs in p["steps"]:
        print(f"\n{step}: {seconds:.2f} s wall")
        if not funcs:
            print("  (no plpgsql function of pgdedup ran: the work is the loader's own SQL and COPY)")
            continue
        table(["function", "calls", "total ms", "self ms", "self % of wall"],
              [[name, f"{calls:,}", f"{total:,.0f}", f"{own:,.0f}", f"{100 * own / 1000 / seconds:.0f}"]
               for name, calls, total, own in funcs[:10]])
    print("\npgdedup.runs stats of those three runs:")
    for kind, stats in p["runs"]:
        print(f"  {kind}: {stats}")


# Table 2: what the triggers cost a writer ------------------------------------------------------------

def trigger_cost(conn: psycopg.Connection, dsn: str, repeats: int) -> None:
    """Insert TRIGGER_ROWS rows in one statement and in statements of TRIGGER_STATEMENT_ROWS, into an
    empty copy of the table, with and without tracking; prints the table."""
    name, cols = "feed_items_copy", sql.SQL(", ").join(map(sql.Identifier, sample.COLUMNS))
    for t in (name, "trigger_src"):
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(t)))
    sample.load(conn, TRIGGER_ROWS, "trigger_src", seed=7)
    conn.execute("ALTER TABLE trigger_src ADD COLUMN n bigserial")
    conn.execute("CREATE INDEX ON trigger_src (n)")
    conn.execute("VACUUM (ANALYZE) trigger_src")
    conn.execute(sql.SQL(sample.FEED_ITEMS_DDL).format(sql.Identifier(name)))
    pgdedup.index(name, KEY, TEXT_COLUMNS, dsn=dsn, progress=False)  # an empty collection, to track
    insert = sql.SQL("INSERT INTO {} ({}) SELECT {} FROM trigger_src WHERE n > %s AND n <= %s").format(
        sql.Identifier(name), cols, cols)
    shapes = {"1 statement × 10,000 rows": 1, f"{TRIGGER_ROWS // TRIGGER_STATEMENT_ROWS} statements × "
              f"{TRIGGER_STATEMENT_ROWS} rows": TRIGGER_ROWS // TRIGGER_STATEMENT_ROWS}
    ms: dict[tuple[str, bool], list[float]] = {(s, t): [] for s in shapes for t in (False, True)}
    for rep in range(repeats):
        for tracked in ((False, True) if rep % 2 == 0 else (True, False)):
            for shape, statements in shapes.items():
                pgdedup.track(name, on=tracked, dsn=dsn)
                conn.execute(sql.SQL("TRUNCATE {}").format(sql.Identifier(name)))
                step = TRIGGER_ROWS // statements
                t0 = time.perf_counter()
                for i in range(statements):
                    conn.execute(insert, (i * step, (i + 1) * step))
                ms[shape, tracked].append(1000 * (time.perf_counter() - t0))
                if tracked:  # empty the queue again (untimed), so every measurement starts alike
                    pgdedup.track(name, on=False, dsn=dsn)
                    conn.execute("VACUUM pgdedup.queue")
    print(f"\nTable 2: tracking triggers, {TRIGGER_ROWS:,} rows (~3 KB) INSERT ... SELECT into an empty "
          f"copy of the table, autocommit; median (min–max) of {repeats}")
    rows = []
    for shape, statements in shapes.items():
        off, on = ms[shape, False], ms[shape, True]
        ratios = [b / a for a, b in zip(off, on)]
        per_statement = (statistics.median(on) - statistics.median(off)) / statements
        rows.append([shape, spread(off, "{:.0f}"), spread(on, "{:.0f}"), spread(ratios, "{:.2f}×"),
                     f"{per_statement:.2f}", f"{1000 * per_statement * statements / TRIGGER_ROWS:.1f}"])
    table(["insert", "untracked ms", "tracked ms", "tracked / untracked", "extra ms / statement", "extra µs / row"],
          rows)


# Running it ------------------------------------------------------------------------------------------

def run(dsn: str, sizes: list[int], repeats: int, trigger_repeats: int) -> None:
    print(machine_info(dsn))
    with psycopg.connect(dsn) as conn:
        settings = ", ".join(f"{s} {conn.execute(f'SHOW {s}').fetchone()[0]}" for s in ("shared_buffers", "jit"))
    print(f"server: {settings}; load avg at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
          f"{time.strftime('%Y-%m-%d %H:%M')}")
    results: list[SizeResult] = []
    with psycopg.connect(dsn, autocommit=True) as admin, psycopg.connect(dsn) as client:
        for n in sizes:
            result = SizeResult(n, set_up(admin, dsn, n))
            stories = Stories.of(client, SEED)
            client.commit()
            for i in range(repeats):
                b = one_batch(client, dsn, stories)
                result.batches.append(b)
                log(f"{n:,} rows, batch {i + 1}/{repeats}: index {b.index_s:.2f} s + {b.kind} dedupe "
                    f"{b.dedupe_s:.2f} s ({b.rows_examined:,} rows re-examined), full {b.full_s:.1f} s, "
                    f"{b.differing} marks differ")
            result.profile = profile_batch(client, dsn, stories)
            results.append(result)
        print(f"\nTable 1: a change batch of {NEW_ROWS:,} inserts ({round(NEW_ROWS * COPY_SHARE)} near-copies of "
              f"existing stories, {round(NEW_ROWS * COPY_SHARE * EARLIER_SHARE)} of them dated before their "
              f"original), {UPDATES} text updates, {DELETES} deletes; keep order {KEEP_ORDER!r}; "
              f"median (min–max) of {repeats} batches")
        metrics: dict[str, dict[int, str]] = {}
        for r in results:
            for m, v in {**r.setup, **batch_rows(r)}.items():
                metrics.setdefault(m, {})[r.rows] = v
        table(["rows", *(f"{n:,}" for n in sizes)], [[m, *(v.get(n, "") for n in sizes)] for m, v in metrics.items()])
        print(f"targets (issue tracker, {TARGET_ROWS:,} rows): index + dedupe of the batch ≤ {TARGET_SECONDS:.0f} s "
              f"together and ≥ {TARGET_SPEEDUP:.0f}× faster than a full dedupe in the same run")
        print("\nEvery batch (the spread above comes from these):")
        table(["rows", "batch", "index s", "dedupe s", "kind", "rows re-examined", "texts", "full s", "speed-up",
               "marks differ"],
              [[f"{r.rows:,}", str(i), f"{b.index_s:.2f}", f"{b.dedupe_s:.2f}", b.kind, f"{b.rows_examined:,}",
                f"{b.texts:,}", f"{b.full_s:.1f}", f"{b.speedup:.1f}×", str(b.differing)]
               for r in results for i, b in enumerate(r.batches, 1)])
        trigger_cost(admin, dsn, trigger_repeats)
        print("\nTable 3: where the time goes")
        for r in results:
            print_profile(r)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", default="100000,1000000", help="comma-separated table sizes (e.g. 20000 for a quick run)")
    parser.add_argument("--repeats", type=int, default=3, help="change batches per size")
    parser.add_argument("--trigger-repeats", type=int, default=5, help="repeats of each trigger measurement")
    parser.add_argument("--dsn", help="scratch database (its feed_items, feed_items_copy, trigger_src, bench_marks "
                                      "and schema pgdedup are DROPPED); default: a throwaway local PostgreSQL")
    args = parser.parse_args()
    sizes = [int(s.replace("_", "")) for s in args.rows.split(",") if s.strip()]
    if not sizes or min(sizes) < 2000 or args.repeats < 1 or args.trigger_repeats < 1:
        parser.error("sizes of at least 2000 rows, and at least one repeat")
    if args.dsn:
        run(args.dsn, sizes, args.repeats, args.trigger_repeats)
        return
    with LocalPostgres() as pg:
        run(pg.dsn, sizes, args.repeats, args.trigger_repeats)


if __name__ == "__main__":
    main()
