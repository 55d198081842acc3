"""Tables with planted near-duplicates and known answers, for the dedupe and CLI tests."""

from __future__ import annotations

import random
import uuid
from datetime import datetime, timedelta, timezone

import pgdedup

VOCAB = [f"w{i}" for i in range(5000)]


def story(rng: random.Random, words: int = 200) -> list[str]:
    return [rng.choice(VOCAB) for _ in range(words)]


def edit(rng: random.Random, words: list[str], substitutions: int) -> list[str]:
    out = list(words)
    for _ in range(substitutions):
        out[rng.randrange(len(out))] = rng.choice(VOCAB)
    return out


def make_rows(key_type: str, groups: int = 20, copies: int = 3, unrelated: int = 40, seed: int = 7):
    """Rows (key, title, body, published_at), the planted groups (lists of keys, in publish order)
    and each group's original.

    Each group: an original and ``copies`` light edits (2 substituted words of 200: J ≈ 0.9),
    published later than the original, except that every 4th group's original is published last.
    """
    rng = random.Random(seed)
    t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
    rows, planted, originals, n = [], [], [], 0

    def key() -> object:
        nonlocal n
        n += 1
        return uuid.UUID(int=rng.getrandbits(128)) if key_type == "uuid" else 10**10 + n

    for g in range(groups):
        base = story(rng)
        title = f"story {g}"
        members = []
        for c in range(copies + 1):
            words = base if c == 0 else edit(rng, base, 2)
            hours = (copies + 1 - c) if (g % 4 == 0 and c == 0) else c
            k = key()
            rows.append((k, title, " ".join(words), t0 + timedelta(days=g, hours=hours)))
            members.append((hours, k))
            if c == 0:
                originals.append(k)
        planted.append([k for _, k in sorted(members, key=lambda m: m[0])])
    for _ in range(unrelated):
        rows.append((key(), "unrelated", " ".join(story(rng)), t0))
    for body in (None, "", "   "):
        rows.append((key(), None, body, t0))
    rng.shuffle(rows)
    return rows, planted, originals


def create(conn, table: str, key_type: str, rows) -> None:
    conn.execute(f'CREATE TABLE "{table}" (id {key_type} PRIMARY KEY, title text, body text, published_at timestamptz)')
    with conn.cursor().copy(f'COPY "{table}" (id, title, body, published_at) FROM STDIN') as copy:
        for r in rows:
            copy.write_row(r)


def indexed(conn, dsn: str, table: str = "items", key_type: str = "bigint", **make: int):
    """``make_rows(key_type, **make)`` as table ``table``, indexed on title and body; returns
    what ``make_rows`` returns."""
    made = make_rows(key_type, **make)
    create(conn, table, key_type, made[0])
    pgdedup.index(table, "id", ["title", "body"], dsn=dsn, progress=False)
    return made
