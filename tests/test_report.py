"""``pgdedup report``: a self-contained page, rendered by a real headless Chromium.

CI installs Debian's chromium (.ci/run); without it the browser checks are skipped and the
page's own checks still run."""

from __future__ import annotations

import re
import shutil
import subprocess

import matplotlib.image
import pytest

import pgdedup

from clirun import cli, one_line_error
from planted import indexed

CHROMIUM = shutil.which("chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _chromium(tmp_path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def items(conn, dsn):
    return indexed(conn, dsn, groups=6, copies=3, unrelated=10)


def test_the_page_shows_the_groups(tmp_path, conn, dsn, items):
    one_line_error(cli("report", "items", "--html", str(tmp_path / "x.html"), "--dsn", dsn), "no dedupe result yet")
    pgdedup.dedupe("items", keep_order="published_at, id", dsn=dsn)
    page = tmp_path / "report.html"
    proc = cli("report", "items", "--html", str(page), "--groups", "3", "--dsn", dsn)
    assert proc.returncode == 0, proc.stderr
    text = page.read_text()
    # self-contained: nothing fetched (the only URL is SVG's namespace name)
    assert not re.search(r"<script|<link|<img|src=|href=|url\(|@import", text)
    assert set(re.findall(r"https?://[^\"' ]+", text)) <= {"http://www.w3.org/2000/svg"}
    largest = conn.execute("SELECT duplicate_of::text FROM items WHERE duplicate_of IS NOT NULL "
                           "GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 3").fetchall()
    assert re.findall(r'data-kept="([^"]+)"', text) == [k for (k,) in largest]
    assert "<mark>" in text  # differing words highlighted

    if CHROMIUM is None:
        pytest.skip("chromium is not installed here (CI installs it)")
    dom = _chromium(tmp_path, "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr
    assert all(f'data-kept="{k}"' in dom.stdout for (k,) in largest) and "<svg" in dom.stdout
    shot = tmp_path / "shot.png"
    assert _chromium(tmp_path, "--window-size=1200,1600", f"--screenshot={shot}", page.as_uri()).returncode == 0
    image = matplotlib.image.imread(shot)
    ink = (image[:, :, :3] < 0.9).any(axis=2).mean()  # share of pixels that are not (nearly) white
    assert 0.02 < ink < 0.9, ink


def test_stage_lines_of_report_and_pairs(tmp_path, conn, dsn, items, capfd):
    pgdedup.dedupe("items", keep_order="published_at, id", dsn=dsn, progress=False)
    pgdedup.report("items", tmp_path / "r.html", dsn=dsn, progress=True)
    assert list(pgdedup.pairs("items", dsn=dsn, progress=True))
    err = capfd.readouterr().err
    assert re.search(r"report items: candidate pairs of the sample estimated \(\d+\.\d s\)", err), err
    assert "report items: page written" in err and "pairs items: every pair found and sent" in err


def test_the_page_shows_the_settings_of_the_result_it_shows(tmp_path, conn, dsn, items):
    """A dedupe may override the collection's threshold: the page showed the collection's (0.8)
    and drew the curve there, beside duplicates decided at 0.5."""
    pgdedup.dedupe("items", threshold=0.5, alter=False, keep_order="published_at, id", dsn=dsn)
    page = tmp_path / "r.html"
    pgdedup.report("items", page, dsn=dsn)
    text = page.read_text()
    assert "<tr><th>threshold</th><td>0.5</td></tr>" in text
    assert "<tr><th>decision</th><td>view, verify auto, max bucket 100</td></tr>" in text
    assert re.search(r'<text x="[0-9.]+" y="[0-9.]+">0.5</text></svg>', text), "the curve's threshold mark"
    conn.execute("UPDATE items SET body = body || ' edited' WHERE id = (SELECT min(id) FROM items)")
    conn.commit()
    pgdedup.index("items", dsn=dsn, progress=False)
    pgdedup.report("items", page, dsn=dsn)
    assert "(STALE: indexed since, rerun dedupe)" in page.read_text()
