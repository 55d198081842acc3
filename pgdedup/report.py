"""``pgdedup report NAME --html FILE``: one self-contained page to judge a collection's marks by eye.

The page needs no network (inline CSS and SVG, no script): the collection's settings and counts;
the S-curve of its bands × rows over the histogram of candidate estimates; the distribution of
group sizes; the largest groups, each kept row beside its duplicates with their similarity and
the differing words highlighted; and the decided pairs nearest the threshold, the ones worth a
human look. It reads the stored decision (``pgdedup.duplicates``, the in-place target if there
is one) and samples what would be costly on a large collection: candidate estimates come from
the ``SAMPLE_ROWS`` rows with the lowest row ids (row ids are hashes of the keys, so that is a
fixed pseudo-random sample), at most ``PAIRS_PER_ROW`` bucket mates each (so a bucket that
thousands of rows share costs no more than any other), and only the texts shown are read from
the source table.
"""

from __future__ import annotations

import difflib
import html
from dataclasses import dataclass
from pathlib import Path
from typing import Any


from .collections import Collection, StoredResult, get, stored_result
from .connection import Db, session
from .db import guard_source, source_texts
from .errors import InvalidArgument, translated
from .normalise import normalise, tokens
from .progress import Progress
from .queries import status
from .tune import TuneReport, svg_plot

SAMPLE_ROWS = 2000
PAIRS_PER_ROW = 25
SHOWN_WORDS = 150


@dataclass
class ReportResult:
    """What ``report`` wrote; ``summary()`` is the line the CLI prints."""

    name: str
    path: str
    groups_shown: int
    pairs_sampled: int

    def summary(self) -> str:
        return (f"wrote {self.path}: {self.name}, {self.groups_shown} largest groups, "
                f"{self.pairs_sampled} sampled candidate pairs")


def _highlight(a: str, b: str) -> tuple[str, str]:
    """The first ``SHOWN_WORDS`` normalised words of two texts as HTML, the words that differ
    between them in <mark>."""
    wa, wb = tokens(normalise(a))[:SHOWN_WORDS], tokens(normalise(b))[:SHOWN_WORDS]
    out_a: list[str] = []
    out_b: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes():
        for words, out in ((wa[i1:i2], out_a), (wb[j1:j2], out_b)):
            if not words:
                continue
            text = html.escape(" ".join(words))
            out.append(text if op == "equal" else f"<mark>{text}</mark>")
    return " ".join(out_a), " ".join(out_b)


def _bars(counts: list[tuple[int, int]]) -> str:
    """A small SVG bar chart of (group size, number of groups)."""
    if not counts:
        return "<p>No groups.</p>"
    w, h, m = 480, 220, 36
    top = max(c for _, c in counts)
    bw = (w - 2 * m) / len(counts)
    rects = "".join(
        f'<rect x="{m + i * bw + 1:.1f}" y="{h - m - c / top * (h - 2 * m):.1f}" width="{bw - 2:.1f}" '
        f'height="{c / top * (h - 2 * m):.1f}" fill="steelblue"><title>{c} groups of {size}</title></rect>'
        f'<text x="{m + (i + 0.5) * bw:.1f}" y="{h - m + 14}" text-anchor="middle">{size}</text>'
        for i, (size, c) in enumerate(counts))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" '
            f'font-size="11"><rect width="{w}" height="{h}" fill="white"/>{rects}'
            f'<line x1="{m}" y1="{h - m}" x2="{w - m}" y2="{h - m}" stroke="black"/>'
            f'<text x="{m}" y="{m - 12}">groups by size (rows per group, kept row included); most: {top}</text>'
            f'<text x="{w / 2:.0f}" y="{h - 4}" text-anchor="middle">group size</text></svg>')


def report(name: str, path: str | Path, *, groups: int = 8, per_group: int = 5, near: int = 20,
           dsn: Db = None, progress: bool | None = None) -> ReportResult:
    """Write the HTML report of collection ``name`` to ``path``; see the module docstring.
    ``progress`` (None: when stderr is a terminal) prints a line as each step ends.

    Raises:
        CollectionNotFound, SourceMissing: no such collection, or its source table is gone.
        InvalidArgument: the collection has no dedupe result yet, or a count below 1.
    """
    if min(groups, per_group, near) < 1:
        raise InvalidArgument("groups, per_group and near must be at least 1")
    shown = Progress(f"report {name}", progress)
    with translated(), session(dsn, f"pgdedup report {name}") as s, shown.stage("page written"):
        conn = s.conn
        coll = get(conn, name)
        guard_source(conn, coll.source, name)  # (need_source's check, made under the table's lock)
        decided = stored_result(conn, coll.id)  # (its settings, not the collection's, are shown)
        if decided is None:
            raise InvalidArgument(f"collection {name!r} has no dedupe result yet: run `pgdedup dedupe {name}` first")
        info = status(name, dsn=conn)[0]
        with shown.stage("candidate pairs of the sample estimated"):
            sims = [r[0] for r in conn.execute(
                "SELECT pgdedup.similarity(a.signature, b.signature) FROM ("
                "  SELECT DISTINCT least(sample.row_id, m.row_id) AS ra, greatest(sample.row_id, m.row_id) AS rb"
                "  FROM (SELECT g.row_id, g.buckets FROM pgdedup.signatures g"
                "        WHERE g.collection_id = %(c)s AND g.feature_count > 0 ORDER BY g.row_id LIMIT %(n)s) sample"
                "  CROSS JOIN LATERAL ("
                "    SELECT y.row_id FROM unnest(sample.buckets) WITH ORDINALITY AS u(bucket, band)"
                "    JOIN pgdedup.band_keys y ON y.collection_id = %(c)s AND y.band = u.band - 1 AND y.bucket = u.bucket"
                "                             AND y.row_id <> sample.row_id"
                "    LIMIT %(p)s) m) p"
                " JOIN pgdedup.signatures a ON a.collection_id = %(c)s AND a.row_id = p.ra"
                " JOIN pgdedup.signatures b ON b.collection_id = %(c)s AND b.row_id = p.rb",
                {"c": coll.id, "n": SAMPLE_ROWS, "p": PAIRS_PER_ROW})]
        sizes = conn.execute(
            "SELECT size, count(*) FROM (SELECT count(*) + 1 AS size FROM pgdedup.duplicates "
            "WHERE collection_id = %s AND target = %s GROUP BY duplicate_of) g GROUP BY size ORDER BY size",
            (coll.id, decided.target)).fetchall()
        largest = conn.execute(
            "SELECT duplicate_of, count(*) + 1 FROM pgdedup.duplicates WHERE collection_id = %s AND target = %s "
            "GROUP BY duplicate_of ORDER BY count(*) DESC, duplicate_of LIMIT %s", (coll.id, decided.target, groups)).fetchall()
        members = {kept: conn.execute(
            "SELECT row_key, similarity FROM pgdedup.duplicates WHERE collection_id = %s AND target = %s "
            "AND duplicate_of = %s ORDER BY similarity, row_key LIMIT %s",
            (coll.id, decided.target, kept, per_group)).fetchall() for kept, _ in largest}
        nearest = conn.execute(
            "SELECT duplicate_of, row_key, similarity FROM pgdedup.duplicates WHERE collection_id = %s "
            "AND target = %s ORDER BY similarity - %s, row_key LIMIT %s",
            (coll.id, decided.target, decided.threshold, near)).fetchall()
        wanted = {k for k, _ in largest} | {k for ms in members.values() for k, _ in ms}
        wanted |= {k for pair in nearest for k in pair[:2]}
        texts = source_texts(conn, coll.source, sorted(wanted))
        page = _page(coll, info, decided, sims, sizes, largest, members, nearest, texts)
        Path(path).write_text(page, encoding="utf-8")
    return ReportResult(name, str(path), len(largest), len(sims))


def _page(coll: Collection, info: dict[str, Any], decided: StoredResult, sims: list[float], sizes: list[tuple[int, int]],
          largest: list[tuple[str, int]], members: dict[str, list[tuple[str, float]]],
          nearest: list[tuple[str, str, float]], texts: dict[str, str]) -> str:
    p = coll.params
    esc = html.escape
    decision = (f"{'in place' if decided.target == 'column' else 'view'}, verify {decided.verify}, "
                f"max bucket {decided.max_bucket}"
                + (" (STALE: indexed since, rerun dedupe)" if decided.target in (info.get("stale") or []) else ""))
    settings = [("source", info.get("source", coll.source.label)), ("key", coll.source.key), ("text", ", ".join(coll.source.text_columns)),
                ("threshold", decided.threshold), ("bands × rows", f"{p.bands} × {p.rows}"), ("num_perm", p.num_perm),
                ("features", f"{p.unit} {p.ngram}-grams"), ("rows indexed", info.get("rows_indexed")),
                ("duplicates", sum(n * (size - 1) for size, n in sizes)),
                ("groups", sum(n for _, n in sizes)), ("decision", decision)]
    if coll.source.partition:
        settings.append(("partitioned by", coll.source.partition))
    rows = "".join(f"<tr><th>{esc(str(k))}</th><td>{esc(str(v))}</td></tr>" for k, v in settings)
    groups_html = []
    for kept, size in largest:
        cells = []
        for key, similarity in members[kept]:
            a, b = _highlight(texts.get(kept, ""), texts.get(key, ""))
            cells.append(f'<tr><td class="text"><b>kept {esc(kept)}</b><br>{a}</td>'
                         f'<td class="text"><b>{esc(key)}</b> · similarity {similarity:.3f}<br>{b}</td></tr>')
        groups_html.append(f'<section class="group" data-kept="{esc(kept)}"><h3>Group of {size} rows, kept '
                           f'{esc(kept)}</h3><table class="pair">{"".join(cells)}</table></section>')
    near_rows = "".join(
        f'<tr><td>{esc(kept)}</td><td>{esc(key)}</td><td>{similarity:.3f}</td>'
        f'<td class="text">{_highlight(texts.get(kept, ""), texts.get(key, ""))[1]}</td></tr>'
        for kept, key, similarity in nearest)
    curve = svg_plot(TuneReport(decided.threshold, p.band_threshold, p.num_perm, 0.5, p.bands, p.rows), sims)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>pgdedup report: {esc(coll.name)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #222; max-width: 1200px; }}
table {{ border-collapse: collapse; }} th, td {{ padding: 4px 8px; border-bottom: 1px solid #ddd;
vertical-align: top; text-align: left; }}
td.text {{ font-size: 12px; line-height: 1.4; max-width: 560px; }}
mark {{ background: #ffd54f; }} .charts {{ display: flex; gap: 2em; flex-wrap: wrap; }}
section.group {{ margin-bottom: 2em; }}
</style></head><body>
<h1>pgdedup report: {esc(coll.name)}</h1>
<table class="settings">{rows}</table>
<h2>Candidates and groups</h2>
<div class="charts">{curve}{_bars(sizes)}</div>
<p>The curve is the probability that a pair with Jaccard J becomes a candidate (blue) and is found
(orange); the grey bars are the estimates of {len(sims)} candidate pairs of a fixed sample of rows.</p>
<h2>The largest groups</h2>
<p>Each kept row beside its least similar duplicates (first {SHOWN_WORDS} normalised words; differing
words <mark>highlighted</mark>).</p>
{"".join(groups_html) or "<p>No duplicates.</p>"}
<h2>The duplicates nearest the threshold</h2>
<table class="near"><tr><th>kept</th><th>duplicate</th><th>similarity</th><th>duplicate's text</th></tr>
{near_rows}</table>
</body></html>
"""
