"""Pair quality of pgdedup against exact Jaccard ground truth, with datasketch as a baseline.

    python bench/quality.py [--docs 6000] [--threshold 0.8] [--num-perm 128] [--words 300-500] [--dsn DSN] [--verify-exact]

Method:
1. Corpus (bench/corpus.py, seeded): about half the documents are near-duplicate variants
   (word edits, excerpts, Unicode/case/whitespace changes, boilerplate), the rest unrelated.
2. Ground truth: every document's feature set by a plain reference implementation of the default
   feature set (docs/features.md): ``pgdedup.normalise.normalise``, ``tokens``, the set of 5-token
   shingles joined by one space (1..4 tokens: one shingle of all; none: the empty set). ALL pairs
   with exact Jaccard >= min(0.5, T) are found by prefix filtering: shingles are ranked rarest
   first by document frequency; a pair with J >= t shares >= ceil(t*|x|) shingles, so it must
   share one among the first |x| - ceil(t*|x|) + 1 of each set; candidates from an inverted index
   over those prefixes are then verified exactly with set intersections.
3. pgdedup: COPY into ``docs(id int primary key, body text)``, ``pgdedup.index``, ``pgdedup.pairs``
   with verify "estimate" and "auto" (with ``--verify-exact`` also "exact"); auto's exact checks
   are stored, so it runs on a collection where none were made yet.
4. datasketch: MinHash(num_perm=K, seed=1) of the same reference shingles (utf-8), MinHashLSH at T;
   rows for the raw LSH candidates and for candidates with estimated Jaccard >= T.
5. Per system: pairs reported, precision (reported pairs with exact J >= T / reported), recall
   (exact pairs with J >= T found / all of them), recall per exact-J band, seconds.
   datasketch seconds include the reference shingling (pgdedup's index does its own shingling);
   the corpus COPY is not counted for pgdedup.

Without --dsn a throwaway LocalPostgres is started and stopped. With --dsn, the table ``docs``
is DROPPED and recreated and the collection ``docs`` is re-indexed.
"""

from __future__ import annotations

import argparse
import bisect
import math
import os
import platform
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TypeVar

import datasketch
import numpy as np
import psycopg
from datasketch import MinHash, MinHashLSH

import pgdedup
from pgdedup.localpg import LocalPostgres
from pgdedup.normalise import normalise, tokens

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from corpus import make_corpus  # noqa: E402

NGRAM = 5
T = TypeVar("T")
Pair = tuple[int, int]
#: Recall bands of the result table: (label, low, high), low <= J < high; "1.0" is J == 1 exactly.
BANDS = [("[.80,.85)", 0.80, 0.85), ("[.85,.90)", 0.85, 0.90), ("[.90,.95)", 0.90, 0.95),
         ("[.95,1.0)", 0.95, 1.0), ("1.0", 1.0, 2.0)]
_EDGES = (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0)
TRUTH_BANDS = [(f"[{lo:.2f},{hi:.2f})", lo, hi) for lo, hi in zip(_EDGES, _EDGES[1:])] + [("1.0", 1.0, 2.0)]


def shingles(text: str) -> set[str]:
    """Reference implementation of the default feature set."""
    toks = tokens(normalise(text))
    if len(toks) < NGRAM:
        return {" ".join(toks)} if toks else set()
    return {" ".join(toks[i:i + NGRAM]) for i in range(len(toks) - NGRAM + 1)}


def exact_pairs(sets: list[set[str]], t: float) -> dict[Pair, float]:
    """{(a, b): J} for every pair a < b (0-based) with exact Jaccard >= t, by prefix filtering."""
    ids: dict[str, int] = {}
    docs = [np.fromiter((ids.setdefault(s, len(ids)) for s in x), np.int64, len(x)) for x in sets]
    df = np.bincount(np.concatenate([np.zeros(0, np.int64), *docs]), minlength=len(ids))
    rank = np.empty(len(ids), np.int64)
    rank[np.argsort(df, kind="stable")] = np.arange(len(ids))  # rarest first (any fixed order works)
    ranked = [np.sort(rank[d]).tolist() for d in docs]
    singles = int((df == 1).sum())  # ranks below this occur in one set only: no candidates
    index: dict[int, list[int]] = defaultdict(list)
    candidates: set[Pair] = set()
    for i, r in enumerate(ranked):
        prefix = len(r) - math.ceil(t * len(r) - 1e-9) + 1 if r else 0  # -1e-9: never too short
        for tok in r[bisect.bisect_left(r, singles):prefix]:
            postings = index[tok]
            candidates.update((j, i) for j in postings)
            postings.append(i)
    frozen = [frozenset(r) for r in ranked]
    out: dict[Pair, float] = {}
    for a, b in candidates:
        inter = len(frozen[a] & frozen[b])
        j = inter / (len(frozen[a]) + len(frozen[b]) - inter)
        if j >= t:
            out[(a, b)] = j
    return out


@dataclass
class System:
    name: str
    pairs: set[Pair]
    steps: dict[str, float] = field(default_factory=dict)
    note: str = ""


def timed(steps: dict[str, float], name: str, fn: Callable[[], T]) -> T:
    t0 = time.perf_counter()
    result = fn()
    steps[name] = time.perf_counter() - t0
    return result


def key_pairs(rows: Iterable[tuple[str, str, float]]) -> set[Pair]:
    """pgdedup's (key_a, key_b, sim) with text keys 1..n -> 0-based (a, b), a < b."""
    out = set()
    for ka, kb, _ in rows:
        a, b = int(ka) - 1, int(kb) - 1
        out.add((min(a, b), max(a, b)))
    return out


def run_pgdedup(dsn: str, texts: list[str], t: float, k: int, verify_exact: bool) -> tuple[list[System], float]:
    """Returns the pgdedup systems and the seconds the corpus COPY took."""
    t0 = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS docs")
        conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text)")
        with conn.cursor().copy("COPY docs (id, body) FROM STDIN") as copy:
            for i, text in enumerate(texts, 1):
                copy.write_row((i, text))
        conn.execute("VACUUM (ANALYZE) docs")
    load = time.perf_counter() - t0
    params = pgdedup.Params(threshold=t, num_perm=k)
    steps: dict[str, float] = {}
    timed(steps, "index", lambda: pgdedup.index("docs", "id", ["body"], dsn=dsn, params=params,
                                                progress=False, reindex=True))
    found = timed(steps, "pairs", lambda: key_pairs(pgdedup.pairs("docs", verify="estimate", dsn=dsn)))
    systems = [System("pgdedup --verify estimate", found, steps, f"{params.bands} bands x {params.rows} rows, "
                                                                 f"band threshold {params.band_threshold}")]
    for verify in ("auto", "exact") if verify_exact else ("auto",):
        vsteps = {"index": steps["index"]}
        pairs = timed(vsteps, f"pairs(verify={verify})",
                      lambda: key_pairs(pgdedup.pairs("docs", verify=verify, dsn=dsn)))
        note = ""
        if verify == "auto":
            with psycopg.connect(dsn) as conn:
                checked = conn.execute("SELECT count(*) FROM pgdedup.checked").fetchone()[0]
                lo, hi, small = conn.execute("SELECT * FROM pgdedup.auto_bands(%s, %s)", (t, k)).fetchone()
            note = (f"{checked} candidate pairs checked exactly: estimates in [{lo:.3f}, {hi:.3f}), "
                    f"from {small:.3f} up with a text of fewer than {k} shingles")
        systems.append(System(f"pgdedup --verify {verify}", pairs, vsteps, note))
    return systems, load


def run_datasketch(sets: list[set[str]], t: float, k: int, shingle_seconds: float) -> list[System]:
    steps: dict[str, float] = {"shingle": shingle_seconds}
    live = [i for i, s in enumerate(sets) if s]  # empty texts are skipped, as a user would
    ms: list[MinHash] = timed(steps, "minhash", lambda: MinHash.bulk(
        [[x.encode("utf-8") for x in sets[i]] for i in live], num_perm=k, seed=1))
    lsh = MinHashLSH(threshold=t, num_perm=k)

    def insert() -> None:
        with lsh.insertion_session() as session:
            for i, m in zip(live, ms):
                session.insert(i, m)

    def query() -> set[Pair]:
        return {(i, j) for i, m in zip(live, ms) for j in lsh.query(m) if j > i}

    timed(steps, "insert", insert)
    cands: set[Pair] = timed(steps, "query", query)
    by_doc = dict(zip(live, ms))
    fsteps = dict(steps)
    kept: set[Pair] = timed(fsteps, "estimate filter", lambda: {
        (a, b) for a, b in cands if by_doc[a].jaccard(by_doc[b]) >= t})
    note = f"{lsh.b} bands x {lsh.r} rows"
    return [System("datasketch LSH candidates", cands, steps, note),
            System("datasketch + estimate filter", kept, fsteps, note)]


def table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[c]) for r in [header, *rows]) for c in range(len(header))]
    fmt = lambda r: "  ".join(v.ljust(w) if c == 0 else v.rjust(w) for c, (v, w) in enumerate(zip(r, widths)))
    return "\n".join([fmt(header), "  ".join("-" * w for w in widths), *map(fmt, rows)])


def score(system: System, truth: dict[Pair, float], t: float) -> list[str]:
    positives = {p for p, j in truth.items() if j >= t}
    true = sum(1 for p in system.pairs if truth.get(p, 0.0) >= t)
    cells = [system.name, str(len(system.pairs)),
             f"{true / len(system.pairs):.4f}" if system.pairs else "-",
             f"{len(positives & system.pairs) / len(positives):.4f}" if positives else "-"]
    for _, lo, hi in BANDS:
        band = [p for p, j in truth.items() if lo <= j < hi]
        cells.append(f"{sum(p in system.pairs for p in band) / len(band):.4f}" if band else "-")
    return cells + [f"{sum(system.steps.values()):.2f}"]


def machine(dsn: str) -> str:
    cpuinfo = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    cpu = next((ln.split(":", 1)[1].strip() for ln in cpuinfo.splitlines() if ln.startswith("model name")),
               platform.machine())
    with psycopg.connect(dsn) as conn:
        server = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
    return (f"machine: {os.cpu_count()} cpus ({cpu}); python {platform.python_version()}; postgresql {server}; "
            f"numpy {np.__version__}; datasketch {datasketch.__version__}; psycopg {psycopg.__version__}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=6000)
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--num-perm", type=int, default=128)
    ap.add_argument("--seed", type=int, default=42, help="corpus seed")
    ap.add_argument("--words", default="300-500", help="length range of a base document, in words "
                    "(e.g. 15-60: texts with fewer shingles than num_perm)")
    ap.add_argument("--dsn", help="scratch database (table docs is dropped); default: a throwaway server")
    ap.add_argument("--verify-exact", action="store_true", help="also run pgdedup.pairs(verify='exact')")
    args = ap.parse_args()
    t, k, started = args.threshold, args.num_perm, time.perf_counter()

    low, high = (int(x) for x in args.words.split("-"))
    texts = make_corpus(args.docs, args.seed, (low, high))
    steps: dict[str, float] = {}
    sets = timed(steps, "shingle", lambda: [shingles(x) for x in texts])
    truth = timed(steps, "exact", lambda: exact_pairs(sets, min(0.5, t)))
    shingle_seconds = steps["shingle"]
    print(f"corpus: {len(texts)} docs (seed {args.seed}), {sum(map(len, sets)) / len(sets):.0f} shingles/doc; "
          f"reference shingling {shingle_seconds:.2f} s, exact pairs {steps['exact']:.2f} s")
    print(f"parameters: threshold {t}, num_perm {k}, {NGRAM}-word shingles")
    print(f"exact pairs with J >= {min(0.5, t)}: {len(truth)}; by band:")
    print(table(["J band", "pairs"], [[name, str(sum(lo <= j < hi for j in truth.values()))]
                                      for name, lo, hi in TRUTH_BANDS]))

    server = None if args.dsn else LocalPostgres()
    try:
        dsn = args.dsn or server.start()  # type: ignore[union-attr]
        print(machine(dsn))
        systems, load = run_pgdedup(dsn, texts, t, k, args.verify_exact)
    finally:
        if server is not None:
            server.stop()
    systems += run_datasketch(sets, t, k, shingle_seconds)

    print(f"\ncorpus COPY into docs: {load:.2f} s (not counted)")
    for s in systems:
        steps = ", ".join(f"{n} {v:.2f} s" for n, v in s.steps.items())
        print(f"{s.name}: {steps}" + (f"  [{s.note}]" if s.note else ""))
    n_pos = sum(j >= t for j in truth.values())
    print(f"\nrecall is over {n_pos} exact pairs with J >= {t}; band columns are recall within each exact-J band")
    header = ["system", "pairs", "precision", "recall", *(n for n, _, _ in BANDS), "seconds"]
    print(table(header, [score(s, truth, t) for s in systems]))
    print(f"\ntotal run time {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
