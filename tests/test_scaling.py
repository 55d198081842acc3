"""The distributed layout of docs/scaling.md, proved as far as plain PostgreSQL can: the schema
has nothing Citus would refuse under that layout, and every SQL function runs unchanged, with
equal answers, on a hash-partitioned stand-in of it (partitions standing in for shards)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import psycopg
from psycopg import sql

import families
import pgdedup
from families import PARAMS

LAYOUT_DOC = Path(__file__).resolve().parent.parent / "docs" / "scaling.md"
PARTITIONS = 4
#: Kept whole in the stand-in: the status view reads it (see docs/scaling.md).
WHOLE = {"duplicates"}


def layout() -> dict[str, tuple[str, str | None, str | None]]:
    """table -> (kind, distribution column, co-located with), from the doc's conversion block."""
    block = LAYOUT_DOC.read_text().split("```sql\n", 1)[1].split("```", 1)[0]
    placed: dict[str, tuple[str, str | None, str | None]] = {}
    for table in re.findall(r"create_reference_table\('pgdedup\.(\w+)'\)", block):
        placed[table] = ("reference", None, None)
    for table in re.findall(r"citus_add_local_table_to_metadata\('pgdedup\.(\w+)'\)", block):
        placed[table] = ("local", None, None)
    for table, column, with_ in re.findall(
            r"create_distributed_table\('pgdedup\.(\w+)', '(\w+)', colocate_with => '([\w.]+)'\)", block):
        placed[table] = ("distributed", column, None if with_ == "none" else with_.removeprefix("pgdedup."))
    return placed


def _group(placed: dict, table: str) -> str:
    """The co-location group of a distributed table: the table it is co-located with, transitively."""
    while placed[table][2] is not None:
        table = placed[table][2]
    return table


def test_nothing_in_the_schema_blocks_the_layout(conn, dsn):
    pgdedup.migrate(dsn)
    placed = layout()
    tables = {r[0] for r in conn.execute(
        "SELECT relname FROM pg_class WHERE relnamespace = 'pgdedup'::regnamespace AND relkind = 'r'")}
    assert tables == set(placed), "every pgdedup table is placed, and only those"
    distributed = {t for t, (kind, _, _) in placed.items() if kind == "distributed"}
    assert {"band_keys", "signatures"} <= distributed
    for table, (kind, column, _) in placed.items():
        if kind != "distributed":
            continue
        for name, columns in conn.execute(
                "SELECT conname, array(SELECT attname FROM pg_attribute WHERE attrelid = conrelid "
                "AND attnum = ANY(conkey)) FROM pg_constraint WHERE conrelid = %s::regclass AND contype IN ('p', 'u')",
                (f"pgdedup.{table}",)):
            assert column in columns, f"{name} of {table} lacks the distribution column {column}"
        sequenced = conn.execute(
            "SELECT attname FROM pg_attrdef JOIN pg_attribute ON attrelid = adrelid AND attnum = adnum "
            "WHERE adrelid = %s::regclass AND pg_get_expr(adbin, adrelid) LIKE 'nextval(%%'",
            (f"pgdedup.{table}",)).fetchall()
        assert sequenced == [], f"{table} draws from a sequence"
    foreign = conn.execute(
        "SELECT c.conrelid::regclass::text, c.confrelid::regclass::text, "
        "array(SELECT attname FROM pg_attribute WHERE attrelid = c.conrelid AND attnum = ANY(c.conkey)) "
        "FROM pg_constraint c WHERE c.connamespace = 'pgdedup'::regnamespace AND c.contype = 'f'").fetchall()
    assert foreign, "the schema has foreign keys to check"
    for source, target, columns in foreign:
        (s_kind, s_col, _), (t_kind, _, _) = (placed[source.removeprefix("pgdedup.")],
                                                  placed[target.removeprefix("pgdedup.")])
        if t_kind == "reference":
            assert s_kind in ("reference", "distributed", "local"), (source, target)
            continue
        assert t_kind == "distributed" and s_kind == "distributed", f"{source} -> {target}: not allowed"
        assert _group(placed, source.removeprefix("pgdedup.")) == _group(placed, target.removeprefix("pgdedup."))
        assert s_col in columns, (source, target)


def _partition(conn: psycopg.Connection, table: str, column: str) -> None:
    """Replace pgdedup.<table>, rows and all, by a table hash-partitioned on ``column`` with the
    same columns, keys, indexes, foreign keys, row-level security and policies."""
    flat, ident = f"{table}_flat", sql.Identifier("pgdedup", table)
    fkeys = [r[0] for r in conn.execute("SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = "
                                         "%s::regclass AND contype = 'f'", (f"pgdedup.{table}",))]
    policies = conn.execute("SELECT policyname, qual FROM pg_policies WHERE schemaname = 'pgdedup' AND tablename = %s",
                            (table,)).fetchall()
    conn.execute(sql.SQL("ALTER TABLE {} RENAME TO {}").format(ident, sql.Identifier(flat)))
    conn.execute(sql.SQL("CREATE TABLE {} (LIKE {} INCLUDING ALL) PARTITION BY HASH ({})").format(
        ident, sql.Identifier("pgdedup", flat), sql.Identifier(column)))
    for i in range(PARTITIONS):
        conn.execute(sql.SQL("CREATE TABLE {} PARTITION OF {} FOR VALUES WITH (MODULUS {}, REMAINDER {})").format(
            sql.Identifier("pgdedup", f"{table}_p{i}"), ident, sql.Literal(PARTITIONS), sql.Literal(i)))
    conn.execute(sql.SQL("INSERT INTO {} SELECT * FROM {}").format(ident, sql.Identifier("pgdedup", flat)))
    conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier("pgdedup", flat)))
    for definition in fkeys:
        conn.execute(sql.SQL("ALTER TABLE {} ADD {}").format(ident, sql.SQL(definition)))
    conn.execute(sql.SQL("REVOKE ALL ON {} FROM PUBLIC").format(ident))
    if policies:
        conn.execute(sql.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(ident))
    for name, qual in policies:
        conn.execute(sql.SQL("CREATE POLICY {} ON {} USING ({})").format(sql.Identifier(name), ident, sql.SQL(qual)))


def _fill(conn: psycopg.Connection, rng: random.Random) -> None:
    conn.execute("CREATE TABLE docs (id int PRIMARY KEY, body text, published_at int)")
    with conn.cursor().copy("COPY docs FROM STDIN") as copy:
        for i in range(1, 401):
            copy.write_row((i, families.text(rng, rng.randrange(60), rng.randrange(4)), rng.randrange(10)))
    conn.commit()


def _answers(conn: psycopg.Connection, dsn: str) -> dict[str, object]:
    """What a user sees of collection docs: marks, pairs, similar rows, one explanation, status."""
    marks = conn.execute("SELECT id, duplicate_of FROM docs ORDER BY id").fetchall()
    marked = [m for m in marks if m[1] is not None]
    a, b = marked[0] if marked else (1, 2)
    conn.commit()
    explanation = pgdedup.explain("docs", str(a), str(b), dsn=dsn)
    status = pgdedup.status("docs", dsn=dsn)[0]
    return {"marks": marks,
            "pairs": sorted(pgdedup.pairs("docs", dsn=dsn)),
            "pairs exact": sorted(pgdedup.pairs("docs", verify="exact", dsn=dsn)),
            "similar": pgdedup.similar("docs", key="1", dsn=dsn),
            "similar text": pgdedup.similar("docs", text=families.text(random.Random(5), 3, 1), dsn=dsn),
            "explain": (explanation.estimate, explanation.exact, explanation.shared_bands),
            "status": {k: status[k] for k in ("rows_indexed", "duplicates", "pending")}}


def test_the_sql_functions_run_unchanged_on_a_partitioned_layout(conn, dsn, second_dsn):
    flat_dsn = second_dsn  # an unconverted installation, to compare with
    answers: list[list[dict[str, object]]] = []
    for target, partitioned in ((flat_dsn, False), (dsn, True)):
        rng = random.Random(11)
        with psycopg.connect(target) as c:
            _fill(c, rng)
            pgdedup.index("docs", "id", ["body"], params=PARAMS, dsn=target, progress=False)  # before: rows to move
            if partitioned:
                with c.transaction():
                    for table, (kind, column, _) in layout().items():
                        if kind == "distributed" and table not in WHOLE:
                            _partition(c, table, column)
            pgdedup.track("docs", dsn=target)
            steps = []
            result = pgdedup.dedupe("docs", keep_order="published_at, id", max_bucket=3, dsn=target)
            assert result.kind == "full" and result.duplicates > 0
            steps.append(_answers(c, target))
            next_id = [400]
            for _ in range(3):
                families.apply(c, rng, 15, next_id, tracked=True)
                pgdedup.index("docs", dsn=target, progress=False)
                assert pgdedup.dedupe("docs", keep_order="published_at, id", max_bucket=3, dsn=target).kind == "incremental"
                steps.append(_answers(c, target))
            pgdedup.dedupe("docs", keep_order="published_at, id", max_bucket=3, full=True, dsn=target)
            steps.append(_answers(c, target))
            answers.append(steps)
    assert answers[0] == answers[1]
    parts = conn.execute(
        "SELECT c.relname, p.relname, (xpath('/row/n/text()', query_to_xml(format('SELECT count(*) AS n FROM %I.%I', "
        "'pgdedup', p.relname), false, true, '')))[1]::text::int FROM pg_inherits i JOIN pg_class c ON c.oid = "
        "i.inhparent JOIN pg_class p ON p.oid = i.inhrelid WHERE c.relnamespace = 'pgdedup'::regnamespace "
        "AND p.relkind = 'r'").fetchall()
    converted = {t for t, (kind, _, _) in layout().items() if kind == "distributed" and t not in WHOLE}
    assert {parent for parent, _, _ in parts} == converted
    assert len(parts) == PARTITIONS * len(converted)
    for table in ("band_keys", "signatures", "leaders", "checked"):
        assert all(n > 0 for parent, _, n in parts if parent == table), f"an empty partition of {table}"
