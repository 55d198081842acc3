"""The ``pgdedup`` command line: each subcommand is a thin layer over one Python API call.

Errors meant for the user (missing table, bad parameters, SQL function exceptions) print one
line ``pgdedup: error: ...`` and exit with status 1.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any, TextIO

import psycopg
from tqdm import tqdm

from . import __version__
from . import demo as demo_mod
from .errors import PgdedupError, PgdedupWarning, message_of
from .dedupe import dedupe
from .explain import explain
from .report import report
from .lifecycle import drop, unmark
from .loader import DEFAULT_CHUNK, index
from .params import Params
from .queries import candidate_similarities, pairs, similar, status
from .tracking import track
from .tune import chart, histogram, tune, write_plot
from .watch import watch

DSN_HELP = "PostgreSQL connection string (default: $DATABASE_URL, else the libpq PG* environment)"


def _add_dsn(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dsn", help=DSN_HELP)


def _json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print the summary as one JSON object")


def _emit(args: argparse.Namespace, line: str, data: dict[str, Any]) -> None:
    """The command's summary: its line, or with --json one JSON object (for tools)."""
    print(json.dumps(data, default=_json_default) if args.json else line)


def _threshold(p: argparse.ArgumentParser, default_help: str) -> None:
    p.add_argument("--threshold", type=float, help=f"Jaccard similarity threshold ({default_help})")


def _verify(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument("--verify", choices=("estimate", "auto", "exact"), default=default,
                   help="estimate: keep pairs by signature estimate; auto: re-read from the source text and "
                        "check with exact Jaccard only the pairs whose estimate is too close to the threshold "
                        "to decide; exact: check every candidate (precision 1.0). Default: %(default)s")


def _max_bucket(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-bucket", type=int, default=100, metavar="N",
                   help="a bucket with more than N distinct texts pairs each only with its first N "
                        "(in keep order for dedupe), so its cost stays linear (default %(default)s)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pgdedup", description="Find near-duplicate rows of text inside PostgreSQL (MinHash + LSH).",
        epilog="Errors print one line, 'pgdedup: error: ...', and exit 1 (Ctrl-C: 130; usage errors: 2).")
    parser.add_argument("--version", action="version", version=f"pgdedup {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("demo", help="index and dedupe a sample feed_items table in a throwaway local PostgreSQL")
    p.add_argument("--rows", type=int, default=demo_mod.DEFAULT_ROWS, help="sample rows (default %(default)s)")
    p.add_argument("--keep", action="store_true", help="leave the server running and print its DSN")
    p.add_argument("--dsn", help="use this database instead of starting a local server")

    p = sub.add_parser("migrate", help="create or upgrade the pgdedup schema (alembic)")
    p.add_argument("--revision", default="head", help="target revision (default: head)")
    _json(p)
    _add_dsn(p)

    p = sub.add_parser("index", help="sign a table's text into MinHash signatures and band keys",
                       epilog="examples: pgdedup index feed_items --key feed_item_id --text title --text content; "
                              "pgdedup index tickets --key id --text body --partition-by tenant_id (rows compared within a "
                              "tenant only); pgdedup index feed_items (an existing collection, with its stored settings); "
                              "pgdedup index crawl --scheduler tcp://10.0.0.5:8786 (signed on a Dask cluster)")
    p.add_argument("table", metavar="TABLE", help="source table, optionally schema-qualified; or, without "
                   "--key and --text, the name of an existing collection")
    p.add_argument("--key", metavar="COLUMN", help="unique key column: smallint, integer, bigint, uuid, text or varchar")
    p.add_argument("--text", action="append", metavar="COLUMN",
                   help="text column; repeat to join several with newlines (NULLs skipped); other types "
                        "(jsonb, …) are read as their text form, bytea is refused")
    p.add_argument("--name", help="collection name, at most 52 bytes (default: the table name)")
    p.add_argument("--partition-by", metavar="COLUMN", help="compare rows only with rows having an equal value "
                   "in COLUMN (a tenant, a feed); a setting of a new collection")
    p.add_argument("--threshold", type=float, help="Jaccard similarity a pair must reach (default 0.8)")
    p.add_argument("--band-threshold", type=float, help="threshold the bands are tuned for: lower finds more "
                   "candidates near the threshold at more verification cost (default: max(threshold - 0.15, threshold / 2))")
    p.add_argument("--bands", type=int, help="explicit number of bands (with --rows; see pgdedup tune)")
    p.add_argument("--rows", type=int, help="explicit rows per band (with --bands)")
    p.add_argument("--num-perm", type=int, help="signature length (default 128)")
    p.add_argument("--ngram", type=int, help="shingle size in units (default 5)")
    p.add_argument("--unit", choices=("word", "char"), help="shingle unit (default word)")
    p.add_argument("--reindex", action="store_true", help="rebuild from scratch, also when settings changed")
    p.add_argument("--full", action="store_true", help="compare every row, also on a tracked collection "
                   "(which otherwise signs just the keys its triggers queued)")
    p.add_argument("--chunk-size", type=int, default=DEFAULT_CHUNK, help="rows per chunk (default %(default)s)")
    p.add_argument("--workers", type=int, help="worker processes, each signing one key range; never more "
                   "than one per chunk of rows (default: one per core, at most one per 25,000 rows); with "
                   "--scheduler, key-range tasks (default: one per thread of the cluster)")
    p.add_argument("--scheduler", metavar="ADDRESS", help="sign on a Dask cluster: the scheduler's address, "
                   "e.g. tcp://10.0.0.5:8786 (needs pgdedup[dask] here and on every worker, and workers that "
                   "reach the database at the same DSN)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _json(p)
    _add_dsn(p)

    p = sub.add_parser("dedupe", help="mark near-duplicates: duplicate_of = the kept row's key")
    p.add_argument("name", metavar="NAME", help="collection name")
    _threshold(p, "default: the collection's")
    p.add_argument("--keep-order", metavar="ORDER", help='which row of a group is kept: "ORDER BY" list of '
                   'source columns, e.g. "published_at, feed_item_id" (default: the key)')
    p.add_argument("--column", help="column to add/fill in the source table (default duplicate_of; "
                                    "not with --no-alter)")
    p.add_argument("--no-alter", action="store_true",
                   help="leave the source table alone: write pgdedup.duplicates and a view pgdedup.\"NAME_duplicates\"")
    _max_bucket(p)
    _verify(p, "auto")
    p.add_argument("--full", action="store_true", help="decide every row again (default: after a run with the "
                   "same settings, only what changed since, with the same result, unless so much changed "
                   "that a full run is cheaper)")
    _json(p)
    _add_dsn(p)

    p = sub.add_parser("pairs", help="print every verified near-duplicate pair")
    p.add_argument("name", metavar="NAME")
    _threshold(p, "default: the collection's")
    p.add_argument("--format", choices=("csv", "json"), default="csv", help="output format (default csv)")
    _max_bucket(p)
    _verify(p, "estimate")
    _add_dsn(p)

    p = sub.add_parser("explain", help="why two rows are (or are not) near-duplicates",
                       epilog="example: pgdedup explain feed_items 3f2a… 9c41… --json")
    p.add_argument("name", metavar="NAME")
    p.add_argument("key_a", metavar="KEY_A")
    p.add_argument("key_b", metavar="KEY_B")
    p.add_argument("--max-bucket", type=int, metavar="N",
                   help="as for dedupe (default: the one the collection's marks were decided with, else 100)")
    p.add_argument("--json", action="store_true", help="JSON output")
    _add_dsn(p)

    p = sub.add_parser("report", help="write a self-contained HTML page to judge a collection's marks by eye",
                       epilog="example: pgdedup report feed_items --html report.html")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--html", required=True, metavar="FILE", help="the page to write")
    p.add_argument("--groups", type=int, default=8, help="largest groups shown (default %(default)s)")
    _json(p)
    _add_dsn(p)

    p = sub.add_parser("similar", help="rows similar to a row (--key) or to a text (--text)")
    p.add_argument("name", metavar="NAME")
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--key", help="key of a row of the collection")
    who.add_argument("--text", help="any text, signed with the collection's settings")
    _threshold(p, "default: the collection's")
    p.add_argument("--partition", metavar="VALUE", help="with --text on a partitioned collection: the partition "
                   "to look in")
    p.add_argument("--limit", type=int, default=10, help="at most this many rows (default 10)")
    p.add_argument("--json", action="store_true", help="JSON output")
    _add_dsn(p)

    p = sub.add_parser("tune", help="show the bands × rows a threshold gives, their S-curve and expected recall")
    p.add_argument("name", nargs="?", metavar="NAME", help="also show the similarity histogram of this collection's candidates")
    p.add_argument("--threshold", type=float, required=True, help="Jaccard similarity a pair must reach")
    p.add_argument("--num-perm", type=int, default=128, help="signature length (default 128)")
    p.add_argument("--fp-weight", type=float, default=0.5, help="weight of false positives in the band "
                   "optimisation, 0..1 (false negatives get 1 - this; default 0.5)")
    p.add_argument("--band-threshold", type=float, help="threshold the bands are optimised for (default: max(threshold - 0.15, threshold / 2))")
    p.add_argument("--plot", metavar="FILE", help="also write the S-curve to FILE.svg or FILE.png")
    _add_dsn(p)

    p = sub.add_parser("track", help="queue the keys writers change (triggers), so index signs just those",
                       epilog="example: pgdedup track feed_items; pgdedup track feed_items --off")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--off", action="store_true", help="remove the triggers and the queue")
    _json(p)
    _add_dsn(p)

    p = sub.add_parser("watch", help="keep a tracked collection's marks current: index and dedupe each batch of changes",
                       epilog='example: pgdedup watch feed_items --keep-order "published_at, feed_item_id" '
                              "(SIGINT/SIGTERM finish the current batch and exit 0; a second one cancels it, exit 130)")
    p.add_argument("name", metavar="NAME")
    _threshold(p, "default: the collection's")
    p.add_argument("--keep-order", metavar="ORDER", help="as for dedupe")
    p.add_argument("--column", help="as for dedupe")
    p.add_argument("--no-alter", action="store_true", help="as for dedupe")
    _max_bucket(p)
    _add_dsn(p)

    p = sub.add_parser("drop", help="forget a collection (signatures, band keys, results, view); never the source rows",
                       epilog="example: pgdedup drop feed_items --unmark")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--unmark", action="store_true",
                   help="also clear the marks in the marking column (the column itself stays)")
    _json(p)
    _add_dsn(p)

    p = sub.add_parser("unmark", help="clear the marking column of a collection (every mark set to NULL)")
    p.add_argument("name", metavar="NAME")
    _json(p)
    _add_dsn(p)

    p = sub.add_parser("status", help="collections, their parameters, rows indexed, duplicates, last runs")
    p.add_argument("name", nargs="?", metavar="NAME")
    p.add_argument("--json", action="store_true", help="JSON output")
    _add_dsn(p)
    return parser


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def _print_pairs(args: argparse.Namespace) -> None:
    rows = pairs(args.name, threshold=args.threshold, verify=args.verify, max_bucket=args.max_bucket,
                 dsn=args.dsn)
    first = next(rows, None)  # errors (no collection, bad threshold) come before any output
    rows = itertools.chain([first], rows) if first is not None else iter(())
    out = sys.stdout
    if args.format == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["key_a", "key_b", "similarity"])
        for a, b, s in rows:
            writer.writerow([a, b, f"{s:.4f}"])
        return
    out.write("[")
    for i, (a, b, s) in enumerate(rows):
        out.write(("," if i else "") + "\n" + json.dumps({"key_a": a, "key_b": b, "similarity": s}))
    out.write("\n]\n")


def _print_status(args: argparse.Namespace) -> None:
    rows = status(args.name, dsn=args.dsn)
    if args.json:
        print(json.dumps(rows, default=_json_default, indent=2))
        return
    if not rows:
        print("no collections yet; run `pgdedup index TABLE --key COLUMN --text COLUMN`")
    for r in rows:
        print(f"{r['name']}: {r['source']} key {r['key_column']}, text {', '.join(r['text_columns'])}; "
              f"{r['unit']} {r['ngram']}-grams, {r['num_perm']} perms, {r['bands']} bands × {r['rows_per_band']} rows, "
              f"threshold {r['threshold']} (bands tuned for {r['band_threshold']}); {r['rows_indexed']} rows indexed; "
              f"{_results_summary(r)}; indexed {r['indexed_at'] or 'never'}, deduped {r['deduped_at'] or 'never'}")


def _results_summary(r: dict) -> str:
    """What the stored results of one status row say, including whether they are stale or orphaned."""
    parts = [f"{r['marked']} marked in {r['mark_column']}" if r["mark_column"] else "no marking column",
             f"{r['duplicates']} duplicates in the view result"]
    if r["tracked"]:
        parts.append(f"tracked, {r['queued']} changes queued")
    if r["pending"]:
        parts.append(f"{r['pending']} rows not checked yet")
    if r["stale"]:
        parts.append(f"STALE results ({', '.join(r['stale'])}): rerun dedupe")
    if r["source_missing"]:
        parts.append(f"SOURCE {r['source']} IS GONE: `pgdedup drop {r['name']}` or index the new table")
    return ", ".join(parts)


def _watch(args: argparse.Namespace) -> None:
    """Run the watcher until SIGINT/SIGTERM, which let the current batch finish (exit 0); a second
    one cancels the batch at once (exit 130): a batch waiting on a row lock that an idle
    application transaction holds would wait as long as it stays open, and a batch cut short
    leaves nothing half-done."""
    stop = threading.Event()

    def on_signal(*_: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt  # (psycopg cancels the running query on it)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    watch(args.name, threshold=args.threshold, keep_order=args.keep_order, column=args.column or "duplicate_of",
          alter=not args.no_alter, max_bucket=args.max_bucket, dsn=args.dsn, stop=stop,
          log=lambda line: print(line, flush=True))


def _print_tune(args: argparse.Namespace) -> None:
    report = tune(args.threshold, args.num_perm, args.fp_weight, args.band_threshold)
    # everything that can fail (the collection, the plot's file) before anything is printed
    sims = candidate_similarities(args.name, dsn=args.dsn) if args.name else None
    if args.plot:
        write_plot(report, args.plot, sims)
    print(report.text())
    print(chart(report))
    print(f"index with: pgdedup index TABLE ... --threshold {report.threshold} --num-perm {report.num_perm} "
          f"--bands {report.bands} --rows {report.rows}")
    if args.plot:
        print(f"wrote {args.plot}" + (f" (with the candidates of {args.name})" if args.name else ""))
    if sims is not None:
        print(f"estimated similarity of the {len(sims)} candidate pairs of {args.name}:")
        print(histogram(sims))


#: PostgreSQL's largest integer: a count above it would reach the server as a bigint, for which
#: pgdedup's functions have no signature (an internal-looking "function does not exist").
MAX_INT = 2**31 - 1


def run(args: argparse.Namespace) -> None:
    for option in ("max_bucket", "limit"):
        if (getattr(args, option, None) or 1) > MAX_INT:
            raise ValueError(f"{option} must be a positive integer, not {getattr(args, option)} (at most {MAX_INT})")
    if getattr(args, "no_alter", False) and getattr(args, "column", None) is not None:
        raise ValueError("--column names the column to mark in place; --no-alter marks none "
                         "(the decision goes to pgdedup.duplicates and its view)")
    if args.command == "demo":
        demo_mod.run(rows=args.rows, keep=args.keep, dsn=args.dsn)
    elif args.command == "migrate":
        from .alembic_ops import current_revision, migrate  # alembic only for this command
        migrate(args.dsn or "", args.revision)
        now = current_revision(args.dsn or "")
        _emit(args, f"pgdedup schema at revision {now}", {"revision": now})
    elif args.command == "index":
        if (args.bands is None) != (args.rows is None):
            raise ValueError("--bands and --rows go together")
        if (args.key is None) != (args.text is None):
            raise ValueError("--key and --text go together (a new collection), or neither (an existing one)")
        given = {k: v for k in ("threshold", "band_threshold", "num_perm", "unit", "ngram", "bands", "rows")
                 if (v := getattr(args, k)) is not None}  # the others keep Params' defaults
        if given and args.key is None:
            options = ", ".join("--" + k.replace("_", "-") for k in given)
            raise ValueError(f"{options}: settings of a new collection; to change an existing one's, give --key "
                             "and --text with --reindex")
        params = None if args.key is None else Params(**given)
        result = index(args.table, args.key, args.text, name=args.name, params=params, reindex=args.reindex,
                       full=args.full, dsn=args.dsn, chunk_size=args.chunk_size, progress=False if args.no_progress else None,
                       workers=args.workers, partition_by=args.partition_by, scheduler=args.scheduler)
        _emit(args, result.summary(), {**asdict(result), "unchanged": result.unchanged})
    elif args.command == "dedupe":
        column = args.column or "duplicate_of"
        done = dedupe(args.name, threshold=args.threshold, keep_order=args.keep_order, column=column,
                      alter=not args.no_alter, max_bucket=args.max_bucket, verify=args.verify, full=args.full,
                      dsn=args.dsn)
        _emit(args, done.summary(), asdict(done))
    elif args.command == "pairs":
        _print_pairs(args)
    elif args.command == "similar":
        rows = similar(args.name, key=args.key, text=args.text, threshold=args.threshold, limit=args.limit,
                       dsn=args.dsn, **({} if args.partition is None else {"partition": args.partition}))
        if args.json:
            print(json.dumps([{"key": k, "similarity": s} for k, s in rows]))
        else:
            for k, s in rows:
                print(f"{s:.4f}\t{k}")
    elif args.command == "explain":
        found = explain(args.name, args.key_a, args.key_b, max_bucket=args.max_bucket, dsn=args.dsn)
        print(json.dumps(found.as_dict()) if args.json else found.summary())
    elif args.command == "report":
        written = report(args.name, args.html, groups=args.groups, dsn=args.dsn)
        _emit(args, written.summary(), asdict(written))
    elif args.command == "track":
        on = track(args.name, on=not args.off, dsn=args.dsn)
        _emit(args, f"{args.name}: tracked (the next index compares every row once and the next dedupe decides "
                    "in full; then they take just the queued keys)"
              if on else f"{args.name}: not tracked any more (index compares every row)",
              {"name": args.name, "tracked": on})
    elif args.command == "watch":
        _watch(args)
    elif args.command == "drop":
        forgotten = drop(args.name, unmark=args.unmark, dsn=args.dsn)
        _emit(args, f"dropped {args.name}: {forgotten} rows forgotten" + (", marks cleared" if args.unmark else ""),
              {"name": args.name, "rows_forgotten": forgotten, "unmarked": args.unmark})
    elif args.command == "unmark":
        cleared = unmark(args.name, dsn=args.dsn)
        _emit(args, f"unmarked {args.name}: {cleared} marks cleared", {"name": args.name, "marks_cleared": cleared})
    elif args.command == "status":
        _print_status(args)
    elif args.command == "tune":
        _print_tune(args)


def _error_line(exc: BaseException) -> str | None:
    """The one line to print for an error a user can act on, or None for a bug (a traceback).
    An OSError is the user's too: a file to write in a directory that does not exist, etc.; so is
    a pgdedup warning that ``-W error`` made an error."""
    if isinstance(exc, (PgdedupError, PgdedupWarning, ValueError, OSError)):
        return str(exc).strip().splitlines()[0].removeprefix("pgdedup: ") if str(exc).strip() else type(exc).__name__
    orig = exc if isinstance(exc, psycopg.Error) else getattr(exc, "orig", None)  # SQLAlchemy wraps
    if isinstance(orig, psycopg.Error):
        return message_of(orig)
    return None


def _warning_lines(shown: Callable[..., None]) -> Callable[..., None]:
    """``warnings.showwarning`` for the CLI: pgdedup's own warnings as one line on stderr, as
    errors are (not Python's file, line and source), above any progress bar; others as ``shown``
    (the handler before) shows them."""
    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: TextIO | None = None, line: str | None = None) -> None:
        if issubclass(category, PgdedupWarning):
            tqdm.write(f"pgdedup: warning: {message}", file=sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)
    return show


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; exit status 0, 1 for an error (one line on stderr), 130 on Ctrl-C."""
    args = build_parser().parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _warning_lines(warnings.showwarning)
            run(args)
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("pgdedup: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        line = _error_line(exc)
        if line is None or args.debug:
            raise
        print(f"pgdedup: error: {line}", file=sys.stderr)
        return 1
    return 0
