"""What comparing two signatures costs in PostgreSQL, by the ways SQL can count agreeing positions.

    python bench/similarity.py [--pairs 100000] [--repeat 3] [--dsn DSN]

``--pairs`` random signatures of 128 32-bit values, each with a partner agreeing in ~80 % of
positions (a changed value differs in its low 16 bits too, so every representation counts the
same agreements), in a throwaway LocalPostgres (or ``--dsn``: a scratch database; tables
``sim_int4``/``sim_bits``/``sim_sketch`` and the schema ``pgdedup_bench`` are DROPPED), one table
per representation so each row stays small (no TOAST); then ``SELECT sum(<comparison>)`` over
all pairs, best of ``--repeat``, in µs per pair. Every variant must give the same sum. Variants:

* ``pgdedup.similarity`` of revisions 2 to 22 (a plpgsql loop over the positions of two
  ``int4[]``; its definition is read from sql/0002_dedupe.sql into the bench schema);
* reading the two arrays alone (``cardinality``), the floor of any per-pair function;
* the count as a SQL function over ``unnest(a, b)``, and the same subquery written inline;
* the signatures as ``bit(4096)``: XOR, OR-fold each 32-bit word onto its top bit (shifts by
  16, 8, 4, 2, 1), mask the top bits, ``bit_count`` the words that differ; in plpgsql, and inline;
* the sketches revision 23 stores (the low 16 bits of each value, ``bit varying`` of 2,048 bits,
  made by its ``pgdedup.sketch``): ``pgdedup.similarity`` as revision 23 defines it (read from
  sql/0023_sketches.sql, search_path pinned as shipped), the same folds written inline, and
  reading the two sketches alone.

Every function carries a pinned search_path, as pgdedup's do: the setting costs each call
about a microsecond.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from speed import machine, scratch_database, table  # noqa: E402  (same directory)

K = 128
SQL_DIR = Path(__file__).resolve().parent.parent / "sql"
TOP_BITS = "repeat('1' || repeat('0', 31), 128)::bit(4096)"
FOLDED = ("SELECT y | (y << 1) AS x FROM (SELECT y | (y << 2) AS y FROM (SELECT y | (y << 4) AS y FROM "
          "(SELECT y | (y << 8) AS y FROM (SELECT y | (y << 16) AS y FROM (SELECT a # b AS y FROM sim_bits "
          "OFFSET 0) q OFFSET 0) q OFFSET 0) q OFFSET 0) q OFFSET 0) q")
LANE_ENDS = "repeat('0000000000000001', 128)::bit varying"
FOLDED16 = ("SELECT y | (y >> 1) AS x FROM (SELECT y | (y >> 2) AS y FROM (SELECT y | (y >> 4) AS y FROM "
            "(SELECT y | (y >> 8) AS y FROM (SELECT a # b AS y FROM sim_sketch OFFSET 0) q OFFSET 0) q OFFSET 0) q "
            "OFFSET 0) q")
VARIANTS = {
    "pgdedup.similarity of revisions 2-22 (plpgsql loop, int4[])": "SELECT sum(pgdedup_bench.similarity(a, b)) FROM sim_int4",
    "reading both arrays only (floor)": "SELECT sum(cardinality(a) + cardinality(b)) FROM sim_int4",
    "SQL function over unnest(a, b)": "SELECT sum(pgdedup_bench.similarity_unnest(a, b)) FROM sim_int4",
    "unnest(a, b) inline": ("SELECT sum((SELECT count(*) FILTER (WHERE x = y) FROM unnest(a, b) u(x, y))::float8 / 128) "
                            "FROM sim_int4"),
    "bit(4096) XOR + fold + bit_count, plpgsql": "SELECT sum(pgdedup_bench.similarity_bits(a, b)) FROM sim_bits",
    "bit(4096) XOR + fold + bit_count, inline": (f"SELECT sum(1 - bit_count(x & {TOP_BITS})::float8 / 128) "
                                                 f"FROM ({FOLDED}) f"),
    "pgdedup.similarity of revision 23 (16-bit sketches)": "SELECT sum(pgdedup_bench.similarity(a, b)) FROM sim_sketch",
    "16-bit sketches, the same folds inline": (f"SELECT sum(1 - bit_count(x & {LANE_ENDS})::float8 / 128) "
                                               f"FROM ({FOLDED16}) f"),
    "reading both sketches only (floor)": "SELECT sum(length(a) + length(b)) FROM sim_sketch",
}


def shipped(file: str, start: str, end: str) -> str:
    """A function definition of a released SQL file, from ``start`` to ``end``, moved into the
    bench schema."""
    src = (SQL_DIR / file).read_text()
    at = src.index(start)
    return src[at:src.index(end, at)].replace("pgdedup.", "pgdedup_bench.")


def set_up(conn, pairs: int) -> None:
    import numpy as np
    rng = np.random.default_rng(42)
    a = rng.integers(-2**31, 2**31 - 1, size=(pairs, K), dtype=np.int64).astype(np.int32)
    b = a.copy()
    changed = rng.random((pairs, K)) < 0.2
    flips = rng.integers(1, 2**16, size=int(changed.sum())) | (rng.integers(0, 2**16, size=int(changed.sum())) << 16)
    b[changed] ^= flips.astype(np.uint32).view(np.int32)  # never 0 in the low 16 bits
    conn.execute("DROP SCHEMA IF EXISTS pgdedup_bench CASCADE")
    conn.execute("DROP TABLE IF EXISTS sim_int4, sim_bits, sim_sketch")
    conn.execute("CREATE SCHEMA pgdedup_bench")
    conn.execute(shipped("0002_dedupe.sql", "CREATE FUNCTION pgdedup.similarity(a integer[]", "-- The id of a collection"))
    conn.execute(shipped("0023_sketches.sql", "CREATE FUNCTION pgdedup.sketch(", "-- Estimated Jaccard"))
    conn.execute(shipped("0023_sketches.sql", "CREATE FUNCTION pgdedup.similarity(a bit varying", "ALTER TABLE"))
    conn.execute("""CREATE FUNCTION pgdedup_bench.similarity_unnest(a int4[], b int4[]) RETURNS float8
        LANGUAGE sql IMMUTABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
        SELECT count(*) FILTER (WHERE x = y)::float8 / cardinality(a) FROM unnest(a, b) u(x, y) $$""")
    conn.execute(f"""CREATE FUNCTION pgdedup_bench.similarity_bits(a bit, b bit) RETURNS float8
        LANGUAGE plpgsql IMMUTABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
        DECLARE x bit varying := a # b;
        BEGIN
            x := x | (x << 16); x := x | (x << 8); x := x | (x << 4); x := x | (x << 2); x := x | (x << 1);
            RETURN 1 - bit_count(x & {TOP_BITS})::float8 / 128;
        END $$""")
    for f in ("similarity(int4[], int4[])", "similarity(bit varying, bit varying)", "sketch(int4[])"):
        conn.execute(f"ALTER FUNCTION pgdedup_bench.{f} SET search_path = pg_catalog, pg_temp")
    conn.execute("CREATE TABLE sim_int4 (a int4[], b int4[])")
    conn.execute("CREATE TABLE sim_bits (a bit(4096), b bit(4096))")
    with conn.cursor().copy("COPY sim_int4 (a, b) FROM STDIN") as copy:
        for i in range(pairs):
            copy.write_row((a[i].tolist(), b[i].tolist()))
    bits = "(SELECT string_agg(v::bit(32)::text, '' ORDER BY o) FROM unnest({}) WITH ORDINALITY u(v, o))::bit(4096)"
    conn.execute(f"INSERT INTO sim_bits SELECT {bits.format('a')}, {bits.format('b')} FROM sim_int4")
    conn.execute("CREATE TABLE sim_sketch AS SELECT pgdedup_bench.sketch(a) AS a, pgdedup_bench.sketch(b) AS b "
                 "FROM sim_int4")
    for t in ("sim_int4", "sim_bits", "sim_sketch"):
        conn.execute(f"VACUUM ANALYZE {t}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pairs", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--dsn", help="scratch database (tables sim_int4, sim_bits and schema pgdedup_bench are dropped)")
    args = p.parse_args()
    import psycopg
    with scratch_database(args.dsn) as dsn:
        machine(dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            set_up(conn, args.pairs)
            rows, sums = [], set()
            for label, query in VARIANTS.items():
                best = float("inf")
                for _ in range(args.repeat):
                    t0 = time.perf_counter()
                    value = conn.execute(query).fetchone()[0]
                    best = min(best, time.perf_counter() - t0)
                if not label.startswith("reading"):
                    sums.add(round(float(value), 6))
                rows.append([label, f"{best / args.pairs * 1e6:.2f}"])
            if len(sums) != 1:
                raise SystemExit(f"the variants disagree: {sorted(sums)}")
            loop = float(rows[0][1])
            print(f"\n{args.pairs:,} pairs of {K}-value signatures, best of {args.repeat}")
            table(["comparison", "µs per pair", "× revision 2's loop"],
                  [[r[0], r[1], f"{loop / float(r[1]):.2f}"] for r in rows])
            conn.execute("DROP SCHEMA pgdedup_bench CASCADE")
            conn.execute("DROP TABLE sim_int4, sim_bits, sim_sketch")


if __name__ == "__main__":
    main()
