"""The keep-order walk (``pgdedup.walk``) against a row-by-row reference on random graphs.

The server's walk decides in set-based rounds; the promise it must keep is the sequential one
(docs/features.md): visit rows in keep order; a row is a duplicate of the kept row it has an edge
to with the highest similarity (ties: the earliest), else it is kept. Rows of a text with two or
more rows have an edge to each other (exact copies); fixed rows (decided before, incremental
runs) are kept when reached. The reference below is that sentence in Python, fed the same
temporary tables the walk reads.
"""

from __future__ import annotations

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pgdedup

SIMILARITIES = (0.8, 0.9, 1.0)  # few values: ties are common


def reference_walk(rows: list[tuple[str, int, int]], fixed: list[tuple[str, int, int]],
                   edges: dict[tuple[int, int], float]) -> dict[str, tuple[str, float]]:
    """Marks {row_key: (duplicate_of, similarity)} of the sequential walk; rows are (key, text, rank)."""
    copies = {t for _, t, _ in rows if sum(1 for _, u, _ in rows if u == t) > 1}
    sim = dict(edges)
    sim.update({(t, t): 1.0 for t in copies})
    walked = [(r, False) for r in rows if any(a == r[1] for a, _ in sim)] + [(f, True) for f in fixed]
    kept: list[tuple[str, int, int]] = []
    marks = {}
    for (key, text, rank), is_fixed in sorted(walked, key=lambda x: x[0][2]):
        options = [(-sim[text, k_text], k_rank, k_key) for k_key, k_text, k_rank in kept if (text, k_text) in sim]
        if options and not is_fixed:
            s, _, best = min(options)
            marks[key] = (best, -s)
        else:
            kept.append((key, text, rank))
    return marks


@st.composite
def walks(draw):
    texts = draw(st.integers(1, 9))
    n_rows = draw(st.integers(0, 18))
    n_fixed = draw(st.integers(0, 4))
    ranks = draw(st.permutations(range(1, n_rows + n_fixed + 1)))
    rows = [(f"r{i}", draw(st.integers(1, texts)), ranks[i]) for i in range(n_rows)]
    # fixed rows have texts of their own (outside the region an incremental run walks)
    fixed = [(f"f{i}", texts + 1 + draw(st.integers(0, 2)), ranks[n_rows + i]) for i in range(n_fixed)]
    all_texts = list(range(1, texts + 4))
    pairs = [(a, b) for a in all_texts for b in all_texts if a < b and (a <= texts or b <= texts)]
    density = draw(st.sampled_from((0.15, 0.3, 0.6)))  # sparse chains to dense cliques
    edges = {}
    for a, b in pairs:
        if draw(st.floats(0, 1)) < density:
            edges[a, b] = edges[b, a] = draw(st.sampled_from(SIMILARITIES))
    return rows, fixed, edges


@pytest.fixture
def migrated(dsn):
    pgdedup.migrate(dsn)
    return dsn


#: ``pgdedup.walk``'s (switch point, batch) settings: (0, 1) rounds only (revision 16); (2, 2)
#: rounds while they decide two heads or more, then two heads one by one, and again (on these
#: small graphs, both ways in one walk); None: the defaults (16, 1000: one by one after the first
#: round on these graphs); (10**6, 1) a round after every head decided one by one.
SETTINGS = ((0, 1), (2, 2), None, (10**6, 1))


def server_walk(dsn: str, rows: list[tuple[str, int, int]], fixed: list[tuple[str, int, int]],
                edges: dict[tuple[int, int], float], setting: tuple[int, int] | None = None) -> dict[str, tuple[str, float]]:
    """Marks {row_key: (duplicate_of, similarity)} of ``pgdedup.walk`` fed these rows, fixed rows and edges.

    ``setting`` is the walk's (switch point, batch); None: its defaults.
    """
    with psycopg.connect(dsn) as conn:
        conn.execute("CREATE TEMP TABLE pgdedup_rows (row_id bigint, row_key text, text_hash bigint, rnk bigint)")
        conn.execute("CREATE TEMP TABLE pgdedup_fixed (row_id bigint, row_key text, text_hash bigint, rnk bigint)")
        conn.execute("CREATE TEMP TABLE pgdedup_edges (h1 bigint, h2 bigint, similarity double precision)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO pg_temp.pgdedup_rows VALUES (%s, %s, %s, %s)",
                            [(i, k, t, r) for i, (k, t, r) in enumerate(rows)])
            cur.executemany("INSERT INTO pg_temp.pgdedup_fixed VALUES (%s, %s, %s, %s)",
                            [(100 + i, k, t, r) for i, (k, t, r) in enumerate(fixed)])
            cur.executemany("INSERT INTO pg_temp.pgdedup_edges VALUES (%s, %s, %s)",
                            [(a, b, s) for (a, b), s in edges.items()])
        if setting is None:
            conn.execute("SELECT pgdedup.walk()")
        else:
            conn.execute("SELECT pgdedup.walk(%s, %s)", setting)
        got = {k: (d, s) for k, d, s in conn.execute("SELECT row_key, duplicate_of, similarity FROM pg_temp.pgdedup_marks")}
        conn.rollback()
    return got


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(walks())
def test_walk_equals_the_sequential_walk(migrated, walk):
    rows, fixed, edges = walk
    expected = reference_walk(rows, fixed, edges)
    for setting in SETTINGS:
        assert server_walk(migrated, rows, fixed, edges, setting) == expected, f"setting {setting}"


def test_a_chain_alternates_kept_and_duplicate(migrated):
    """Texts 1-2-3-4-5 in keep order, each similar only to its neighbours: 1, 3, 5 kept (by hand)."""
    rows = [(f"r{t}", t, t) for t in range(1, 6)]
    edges = {}
    for t in range(1, 5):
        edges[t, t + 1] = edges[t + 1, t] = 0.9
    by_hand = {"r2": ("r1", 0.9), "r4": ("r3", 0.9)}
    assert reference_walk(rows, [], edges) == by_hand
    for setting in SETTINGS:
        assert server_walk(migrated, rows, [], edges, setting) == by_hand


@pytest.mark.parametrize("setting", [(-1, 1), (16, 0), (None, 1000), (16, None)])
def test_the_walk_refuses_bad_settings_before_it_builds_anything(migrated, setting):
    """Without its input tables, a walk that started building would fail on them (42P01): PD003
    says the settings were checked first."""
    with psycopg.connect(migrated) as conn:
        with pytest.raises(psycopg.Error) as raised:
            conn.execute("SELECT pgdedup.walk(%s::integer, %s::integer)", setting)
        assert raised.value.sqlstate == "PD003"
