"""A small corpus of text families with edits on both sides of the threshold, and random
batches of changes to it, as an application makes them (shared by the incremental and the
scaling tests)."""

from __future__ import annotations

import random

import pgdedup

FAMILIES = 4
WORDS = 24

PARAMS = pgdedup.Params(threshold=0.7, ngram=3, num_perm=32, bands=8, rows=2)


def text(rng: random.Random, family: int, edits: int, length: int = WORDS) -> str:
    """A family's base text of ``length`` words with ``edits`` words replaced: edits 0-3 give
    Jaccards from 1 down to about 0.6 against the base (word 3-grams), so pairs fall on both
    sides of the threshold. 24 words make 22 shingles, fewer than PARAMS' 32 positions (verify
    auto checks all such pairs exactly); 40 words make 38, decided by auto's band."""
    words = [f"f{family}w{i}" for i in range(length)]
    for _ in range(edits):
        words[rng.randrange(length)] = f"x{rng.randrange(40)}"
    return " ".join(words)


def apply(conn, rng: random.Random, ops: int, next_id: list[int], tracked: bool, length: int = WORDS) -> None:
    """A batch of random changes to table docs (id, body, published_at) in a few statements,
    texts of ``length`` words."""
    ids = [r[0] for r in conn.execute("SELECT id FROM docs ORDER BY id")]
    for _ in range(ops):
        op = rng.choice(["insert", "insert", "edit", "order", "delete"] if tracked else
                        ["insert", "insert", "edit", "delete"])
        if op == "insert" or not ids:
            next_id[0] += 1
            conn.execute("INSERT INTO docs VALUES (%s, %s, %s)",
                         (next_id[0], text(rng, rng.randrange(FAMILIES), rng.randrange(4), length), rng.randrange(10)))
            ids.append(next_id[0])
        elif op == "edit":
            conn.execute("UPDATE docs SET body = %s WHERE id = %s",
                         (text(rng, rng.randrange(FAMILIES), rng.randrange(4), length), rng.choice(ids)))
        elif op == "order":  # a keep-order column only: seen through tracking
            conn.execute("UPDATE docs SET published_at = %s WHERE id = %s", (rng.randrange(10), rng.choice(ids)))
        else:
            gone = ids.pop(rng.randrange(len(ids)))
            conn.execute("DELETE FROM docs WHERE id = %s", (gone,))
    conn.commit()
