"""Speed of pgdedup against datasketch and rensa, and of pgdedup's whole database flow.

    python bench/speed.py [--docs 20000] [--flow-rows 100000,1000000] [--skip-flow] [--no-db] [--dsn DSN]

Table 1, text to signatures + band keys (num_perm 128, threshold 0.8), features included. The
texts are the ``content`` of ``pgdedup.sample.generate(seed=42)`` rows, those of >= 1,000 chars
(originals, re-fetches and edits: ~3 KB each). Every system runs in a fresh subprocess of this
script (``--_one SYSTEM``) that regenerates the identical list (a checksum is compared) and
times only the work below; best of ``--repeat`` runs (default 3). Peak RSS is the subprocess's
``ru_maxrss``: interpreter, imports and texts included ("base", taken before the timed part).

* pgdedup: ``sign_texts`` on chunks of 2,000 texts, one process; results kept.
* datasketch / rensa: the shingling a user writes in Python for the same feature set (NFKC +
  casefold + ``str.split``, word 5-grams joined by spaces as a set of UTF-8 bytes), then
  ``MinHash.bulk`` + ``MinHashLSH(0.8, 128).insert`` per doc, or ``RMinHash.from_token_sets``
  + ``RMinHashLSH(0.8, 128, 8).insert_many``. Each keeps its sketches and its LSH index.
* pgdedup index, end to end (unless ``--no-db``): the same texts as a table ``speed_texts (id
  integer PRIMARY KEY, body text)`` in the benchmark's database, then ``pgdedup.index`` with 2
  workers into an empty ``pgdedup`` schema (migrated beforehand, untimed) in a fresh subprocess:
  worker processes started, rows read from PostgreSQL, signed, signatures and band keys COPYed
  and committed, the staged band keys moved, and (since 2026-12-07) the run's closing VACUUM
  of the tables it wrote.
  The peers keep everything in memory and write nothing anywhere; the server shares the
  machine's cores with the signers. Its ratio column is the target of the speed issue.

Table 2, the database flow on a ``feed_items`` table (``sample.load``, then VACUUM ANALYZE) in
a throwaway LocalPostgres (or ``--dsn``: a scratch database whose ``feed_items`` table and
``pgdedup`` schema are DROPPED). ``pgdedup.index`` runs with workers=1, then with workers=2,
each in a fresh subprocess from an empty ``pgdedup`` schema (dropped before each run, so both
pay the migration and neither pays for deleting the other's rows or leaves dead tuples);
its RSS is ``ru_maxrss`` of the main process and, for workers, of the largest child
(RUSAGE_CHILDREN). Then, timed from this process, right after the second index run (which
VACUUMs the tables it wrote itself, as a full run that wrote at least a twentieth of the
rows does): ``count(*)`` of ``candidate_pairs`` and of
``verified_pairs``, and ``pgdedup.dedupe(keep_order='published_at, feed_item_id')`` (verify auto,
the default), which redoes candidates and verification itself, then the same dedupe by
estimate alone (``verify="estimate", full=True``) and the ratio of the two (the issue's
≤ 1.3× target for auto). Sizes are ``pg_total_relation_size`` (heap + indexes + TOAST).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import platform
import resource
import subprocess
import sys
import time
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psycopg

SYSTEMS = ("pgdedup", "datasketch", "rensa")
LABELS = {"pgdedup": "pgdedup sign_texts, one process"}
NUM_PERM, THRESHOLD, SEED, CHUNK = 128, 0.8, 42, 2000
TEXT_COLUMNS = ["title", "summary", "content"]


def make_texts(n: int, seed: int = SEED) -> list[str]:
    """n deterministic ~3 KB texts: sample contents of at least 1,000 characters."""
    from pgdedup import sample
    out: list[str] = []
    for row in sample.generate(2 * n + 1000, seed):
        if row[2] is not None and len(row[2]) >= 1000:
            out.append(row[2])
            if len(out) == n:
                return out
    raise RuntimeError("the generator gave too few long texts")


def shingles(text: str) -> set[bytes]:
    """The default feature set written the way a user writes it in Python (word 5-grams)."""
    words = unicodedata.normalize("NFKC", text).casefold().split()
    if len(words) < 5:
        return {" ".join(words).encode()} if words else set()
    return {" ".join(words[i:i + 5]).encode() for i in range(len(words) - 4)}


def run_pgdedup(texts: list[str]) -> tuple[object, str]:
    from pgdedup.params import Params
    from pgdedup.signer import sign_texts
    params = Params(threshold=THRESHOLD, num_perm=NUM_PERM)
    chunks = [sign_texts(texts[i:i + CHUNK], params) for i in range(0, len(texts), CHUNK)]
    return chunks, f"{params.bands}×{params.rows}"


def run_datasketch(texts: list[str]) -> tuple[object, str]:
    from datasketch import MinHash, MinHashLSH
    hashes = MinHash.bulk([shingles(t) for t in texts], num_perm=NUM_PERM)
    lsh = MinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM)
    for i, m in enumerate(hashes):
        lsh.insert(i, m)
    return (hashes, lsh), f"{lsh.b}×{lsh.r}"


def run_rensa(texts: list[str]) -> tuple[object, str]:
    import rensa
    hashes = rensa.RMinHash.from_token_sets([shingles(t) for t in texts], NUM_PERM, 42)
    lsh = rensa.RMinHashLSH(threshold=THRESHOLD, num_perm=NUM_PERM, num_bands=8)
    lsh.insert_many(hashes, 0)
    return (hashes, lsh), f"8×{NUM_PERM // 8}"


RUNNERS: dict[str, Callable[[list[str]], tuple[object, str]]] = {
    "pgdedup": run_pgdedup, "datasketch": run_datasketch, "rensa": run_rensa}


def one(system: str, docs: int) -> None:
    """Child process: generate the texts, time one system, print one JSON line."""
    texts = make_texts(docs)
    digest = hashlib.sha1("\x00".join(texts).encode()).hexdigest()[:12]
    runner = RUNNERS[system]
    __import__({"pgdedup": "pgdedup.signer"}.get(system, system))  # imports are not timed
    gc.collect()
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    _, bands = runner(texts)
    seconds = time.perf_counter() - t0
    print(json.dumps({"system": system, "docs": len(texts), "seconds": seconds, "bands": bands,
                      "bytes": sum(len(t.encode()) for t in texts), "digest": digest, "base_kb": base,
                      "peak_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))


def child(args: list[str]) -> dict:
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"child {args[:3]} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
    print(line(header))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))


def best_of(repeat: int, system: str, docs: int) -> dict:
    """The fastest of ``repeat`` fresh subprocesses (the machine may be shared), its peak RSS the largest."""
    runs = [child([__file__, "--_one", system, "--docs", str(docs)]) for _ in range(repeat)]
    return {**min(runs, key=lambda r: r["seconds"]), "peak_kb": max(r["peak_kb"] for r in runs)}


# ``python -c INDEX_CHILD DSN WORKERS TABLE KEY COLUMN[,COLUMN...]``: one ``pgdedup.index`` run in a
# fresh process; prints seconds, rows signed and peak RSS (its own, its largest child's) as JSON.
INDEX_CHILD = r"""
import json, resource, sys, time
import pgdedup
if __name__ == "__main__":
    dsn, workers, table, key, columns = sys.argv[1:6]
    t0 = time.perf_counter()
    r = pgdedup.index(table, key, columns.split(","), dsn=dsn, workers=int(workers), progress=False)
    print(json.dumps({"seconds": time.perf_counter() - t0, "signed": r.signed,
                      "self_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      "children_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""


def load_texts(conn, texts: list[str]) -> None:
    """(Re)create the table ``speed_texts (id integer PRIMARY KEY, body text NOT NULL)`` holding
    ``texts`` (ids 0, 1, …), VACUUM ANALYZEd: the source table of every end-to-end index run."""
    conn.execute("DROP TABLE IF EXISTS speed_texts")
    conn.execute("CREATE TABLE speed_texts (id integer PRIMARY KEY, body text NOT NULL)")
    with conn.cursor().copy("COPY speed_texts (id, body) FROM STDIN") as copy:
        for i, text in enumerate(texts):
            copy.write_row((i, text))
    conn.execute("VACUUM ANALYZE speed_texts")


def end_to_end(dsn: str, docs: int, repeat: int, workers: int = 2) -> dict:
    """``pgdedup.index`` of the same texts stored in a table (``speed_texts``) into an empty
    ``pgdedup`` schema (created beforehand, untimed: a database's first index pays ~0.2–0.6 s
    more for it once), in a fresh subprocess: rows read from PostgreSQL, signed by ``workers``
    processes, signatures and band keys committed. The fastest of ``repeat`` runs."""
    import psycopg
    import pgdedup
    texts = make_texts(docs)
    with psycopg.connect(dsn, autocommit=True) as conn:
        load_texts(conn, texts)
        runs = []
        for _ in range(repeat):
            conn.execute("DROP SCHEMA IF EXISTS pgdedup CASCADE")
            pgdedup.migrate(dsn)
            r = child(["-c", INDEX_CHILD, dsn, str(workers), "speed_texts", "id", "body"])
            assert r["signed"] == len(texts), r
            runs.append(r)
        conn.execute("DROP SCHEMA pgdedup CASCADE")
        conn.execute("DROP TABLE speed_texts")
    best = min(runs, key=lambda r: r["seconds"])
    return {"system": f"pgdedup index, {workers} workers (end to end)", "docs": len(texts), "seconds": best["seconds"],
            "bands": "16×8", "peak_kb": best["self_kb"] + best["children_kb"] * workers, "base_kb": 0,
            "spread": [r["seconds"] for r in runs]}


def signing_table(dsn: str | None, docs: int, repeat: int) -> None:
    """Table 1: each system's best of ``repeat`` runs; with a database, pgdedup end to end too."""
    results = [best_of(repeat, s, docs) for s in SYSTEMS]
    if len({r["digest"] for r in results}) != 1:
        raise SystemExit("systems saw different texts: " + ", ".join(r["digest"] for r in results))
    n, size = results[0]["docs"], results[0]["bytes"]
    ours = {"sign_texts": n / results[0]["seconds"]}
    if dsn:
        results.insert(0, end_to_end(dsn, docs, repeat))
        ours["index"] = n / results[0]["seconds"]
    print(f"\nTable 1: {n} texts ({size / 2**20:.1f} MB, mean {size / n:,.0f} bytes) -> signatures + band keys, "
          f"num_perm {NUM_PERM}, threshold {THRESHOLD}, best of {repeat} runs, each in a fresh process")
    table(["system", "bands×rows", "docs/s", "MB/s", "peak RSS MB", "base MB", "seconds",
           *(f"pgdedup {k} ×" for k in ours)],
          [[LABELS.get(r["system"], r["system"]), r["bands"], f"{n / r['seconds']:,.0f}", f"{size / 2**20 / r['seconds']:.2f}",
            f"{r['peak_kb'] / 1024:,.0f}", f"{r['base_kb'] / 1024:,.0f}",
            f"{r['seconds']:.2f}" + (f" ({min(r['spread']):.2f}–{max(r['spread']):.2f})" if "spread" in r else ""),
            *(f"{rate / (n / r['seconds']):.2f}" for rate in ours.values())] for r in results])
    print("(pgdedup index ×: how many times faster pgdedup's end-to-end index is than that system in memory; "
          "peak RSS of index: main process + workers × the largest worker)")


def timed(conn: psycopg.Connection, query: str) -> tuple[float, object]:
    t0 = time.perf_counter()
    value = conn.execute(query).fetchone()[0]
    return time.perf_counter() - t0, value


def flow(dsn: str, n: int) -> dict[str, str]:
    """Load n rows, index twice (workers 1 and 2), then time the stages; metrics as strings."""
    import psycopg
    import pgdedup
    from pgdedup import sample
    out: dict[str, str] = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS feed_items")
        conn.execute("DROP SCHEMA IF EXISTS pgdedup CASCADE")
        t0 = time.perf_counter()
        sample.load(conn, n, "feed_items", seed=SEED)
        conn.execute("VACUUM (ANALYZE) feed_items")
        out["load + vacuum analyze s"] = f"{time.perf_counter() - t0:.1f}"
        source = conn.execute("SELECT pg_total_relation_size('feed_items')").fetchone()[0]
        out["source table MB"] = f"{source / 2**20:,.0f}"
        for workers in (1, 2):
            conn.execute("DROP SCHEMA IF EXISTS pgdedup CASCADE")
            r = child(["-c", INDEX_CHILD, dsn, str(workers), "feed_items", "feed_item_id", ",".join(TEXT_COLUMNS)])
            assert r["signed"] == n, r
            out[f"index w={workers} s"] = f"{r['seconds']:.1f}"
            out[f"index w={workers} rows/s"] = f"{n / r['seconds']:,.0f}"
            rss = f"{r['self_kb'] / 1024:,.0f}"
            out[f"index w={workers} RSS MB main/child"] = rss + (f" / {r['children_kb'] / 1024:,.0f}" if workers > 1 else "")
        cid = "pgdedup.collection_id('feed_items')"
        seconds, cands = timed(conn, f"SELECT count(*) FROM pgdedup.candidate_pairs({cid})")
        out["candidates s"], out["candidate pairs"] = f"{seconds:.1f}", f"{cands:,}"
        seconds, verified = timed(conn, f"SELECT count(*) FROM pgdedup.verified_pairs({cid})")
        out["verification s"], out["verified pairs"] = f"{seconds:.1f}", f"{verified:,}"
        res = pgdedup.dedupe("feed_items", keep_order="published_at, feed_item_id", dsn=dsn)
        out["marking (dedupe, verify auto) s"], out["duplicates marked"] = f"{res.seconds:.1f}", f"{res.duplicates:,}"
        by_estimate = pgdedup.dedupe("feed_items", keep_order="published_at, feed_item_id", verify="estimate",
                                     full=True, dsn=dsn)
        out["marking (dedupe --verify estimate --full) s"] = f"{by_estimate.seconds:.1f}"
        out["auto / estimate"] = f"{res.seconds / by_estimate.seconds:.2f}"
        for t in ("signatures", "band_keys"):
            size = conn.execute(f"SELECT pg_total_relation_size('pgdedup.{t}')").fetchone()[0]
            out[f"pgdedup.{t} MB"] = f"{size / 2**20:,.0f} ({size / n:,.0f} B/row)"
    return out


def flow_table(dsn: str, sizes: list[int]) -> None:
    print(f"\nTable 2: database flow on feed_items ({', '.join(map(str, TEXT_COLUMNS))}), threshold {THRESHOLD}")
    results = {n: flow(dsn, n) for n in sizes}
    metrics = list(results[sizes[0]])
    table(["rows", *(f"{n:,}" for n in sizes)], [[m, *(results[n][m] for n in sizes)] for m in metrics])


@contextmanager
def scratch_database(dsn: str | None) -> Iterator[str]:
    """``dsn`` as given, or that of a throwaway LocalPostgres started here and stopped after."""
    if dsn:
        yield dsn
        return
    from pgdedup.localpg import LocalPostgres
    with LocalPostgres() as server:
        yield server.dsn


def machine(dsn: str | None, packages: tuple[str, ...] = ("pgdedup", "datasketch", "rensa", "numpy")) -> None:
    from importlib.metadata import version
    mem = next(int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal"))
    pg = "not used"
    if dsn:
        import psycopg
        with psycopg.connect(dsn) as conn:
            pg = conn.execute("SHOW server_version").fetchone()[0]
    print(f"machine: nproc {len(os.sched_getaffinity(0))}, RAM {mem / 2**20:.1f} GB, {platform.machine()}, "
          f"load avg {' '.join(f'{x:.2f}' for x in os.getloadavg())} (shared machines make timings noisy)")
    print(f"python {platform.python_version()}, PostgreSQL {pg}, "
          + ", ".join(f"{m} {version(m)}" for m in packages))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--docs", type=int, default=20000, help="texts for table 1")
    p.add_argument("--flow-rows", default="100000,1000000", help="comma-separated table sizes for table 2")
    p.add_argument("--skip-flow", action="store_true", help="table 1 only")
    p.add_argument("--no-db", action="store_true", help="table 1 without the end-to-end index (no server)")
    p.add_argument("--dsn", help="scratch database (feed_items and schema pgdedup are dropped); default: LocalPostgres")
    p.add_argument("--repeat", type=int, default=3, help="table 1: best of this many runs per system")
    p.add_argument("--_one", choices=SYSTEMS, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args._one:
        return one(args._one, args.docs)
    sizes = [int(s.replace("_", "")) for s in args.flow_rows.split(",") if s.strip()]
    with (nullcontext(None) if args.no_db else scratch_database(args.dsn)) as dsn:
        machine(dsn)
        signing_table(dsn, args.docs, args.repeat)
        if dsn and not args.skip_flow:
            flow_table(dsn, sizes)


if __name__ == "__main__":
    main()
