"""A first index with its band keys staged, or written straight into band_keys, end to end.

    python bench/staging.py [--docs 20000,100000,300000] [--repeat 2] [--dsn DSN]

``pgdedup.index`` stages a first load's band keys in ``band_keys_staged`` (one sorted insert into
``band_keys`` at the end) only when their index entries would outgrow twice shared_buffers
(``loader._stages``); below that the workers' COPYs go straight into ``band_keys``. This times
both ways on the same texts (``speed.make_texts``, ~2.9 KB each) in a table ``speed_texts``:
each run in a fresh process (2 workers) into a freshly migrated schema after a CHECKPOINT, the
two ways alternating, ``--repeat`` runs each, forced through ``loader.DIRECT_SHARE_OF_BUFFERS``
(0: always staged, 1e9: never). Prints seconds, median (min–max), and staged ÷ direct.
With ``--dsn``, the table ``speed_texts`` and the schema ``pgdedup`` of that database are DROPPED.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scaling import spread  # noqa: E402  (same directory)
from speed import load_texts, machine, make_texts, scratch_database, table  # noqa: E402

import psycopg  # noqa: E402

CHILD = r"""
import json, sys, time
import pgdedup
from pgdedup import loader
if __name__ == "__main__":
    dsn, share = sys.argv[1], float(sys.argv[2])
    loader.DIRECT_SHARE_OF_BUFFERS = share
    t0 = time.perf_counter()
    r = pgdedup.index("speed_texts", "id", ["body"], dsn=dsn, workers=2, progress=False)
    print(json.dumps({"seconds": time.perf_counter() - t0, "signed": r.signed}))
"""
WAYS = (("staged", 0.0), ("direct", 1e9))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--docs", default="20000,100000,300000", help="comma-separated table sizes")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--dsn", help="scratch database (speed_texts and schema pgdedup are dropped)")
    args = p.parse_args()
    import json
    import pgdedup
    rows = []
    with scratch_database(args.dsn) as dsn:
        machine(dsn, ("pgdedup", "psycopg", "numpy"))
        with psycopg.connect(dsn, autocommit=True) as conn:
            print("shared_buffers", conn.execute("SHOW shared_buffers").fetchone()[0], flush=True)
            for docs in (int(d) for d in args.docs.split(",")):
                load_texts(conn, make_texts(docs))
                seconds: dict[str, list[float]] = {way: [] for way, _ in WAYS}
                for turn in range(args.repeat):
                    for way, share in WAYS[turn % 2:] + WAYS[:turn % 2]:
                        conn.execute("DROP SCHEMA IF EXISTS pgdedup CASCADE")
                        pgdedup.migrate(dsn)
                        conn.execute("CHECKPOINT")
                        proc = subprocess.run([sys.executable, "-c", CHILD, dsn, str(share)],
                                              capture_output=True, text=True)
                        if proc.returncode != 0:
                            raise SystemExit(proc.stderr[-3000:])
                        result = json.loads(proc.stdout.strip().splitlines()[-1])
                        assert result["signed"] == docs, result
                        seconds[way].append(result["seconds"])
                        print(f"{docs:,} {way}: {result['seconds']:.2f} s", flush=True)
                ratio = statistics.median(seconds["staged"]) / statistics.median(seconds["direct"])
                rows.append([f"{docs:,}", *(spread(seconds[way], "{:.2f}") for way, _ in WAYS), f"{ratio:.2f}"])
            conn.execute("DROP SCHEMA IF EXISTS pgdedup CASCADE")
            conn.execute("DROP TABLE IF EXISTS speed_texts")
    print()
    table(["rows", "staged s", "direct s", "staged ÷ direct"], rows)


if __name__ == "__main__":
    main()
