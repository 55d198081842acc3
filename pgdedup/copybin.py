"""PostgreSQL binary COPY streams built from numpy arrays.

Binary COPY is several times faster than text COPY for integer arrays, and building the stream
with numpy (big-endian structured arrays) avoids a Python call per value. Format: a header, then
per tuple an int16 field count and per field an int32 length and the value, then an int16 -1.
Arrays are: ndim, has-null flag, element type oid, length, lower bound, then (length, value)
per element; a bit string is its length in bits, then its bytes.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import psycopg
from psycopg import sql

HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
TRAILER = struct.pack(">h", -1)
INT8_OID = 20
#: Bits a signature position keeps in storage (sql/0023_sketches.sql): the low 16 of its value.
SKETCH_BITS = 16


def _field(name: str, fmt: str) -> list[tuple[str, str]]:
    return [(name + "_len", ">i4"), (name, fmt)]


def _array_fields(name: str, fmt: str, n: int) -> list[tuple[str, str]]:
    head = [(f"{name}_len", ">i4"), (f"{name}_ndim", ">i4"), (f"{name}_null", ">i4"),
            (f"{name}_oid", ">i4"), (f"{name}_dim", ">i4"), (f"{name}_lb", ">i4")]
    return head + [(f"{name}_v", [("len", ">i4"), ("val", fmt)], (n,))]


def _fill_array(rec: np.ndarray, name: str, values: np.ndarray, oid: int, item: int) -> None:
    n = values.shape[1]
    rec[f"{name}_len"] = 20 + n * (4 + item)
    rec[f"{name}_ndim"], rec[f"{name}_null"], rec[f"{name}_oid"] = 1, 0, oid
    rec[f"{name}_dim"], rec[f"{name}_lb"] = n, 1
    rec[f"{name}_v"]["len"] = item
    rec[f"{name}_v"]["val"] = values


def _empty_array(oid: int) -> bytes:
    return struct.pack(">iiii", 12, 0, 0, oid)


def band_keys(collection_id: int, row_ids: np.ndarray, buckets: np.ndarray) -> bytes:
    """COPY stream for ``band_keys (collection_id, band, bucket, row_id)``: one tuple per band,
    in the order of the table's primary key (band, then bucket): the COPY then inserts into that
    index from left to right instead of at random places, which made a 20,000-row first index
    ~6 % slower (README, "Sorted band keys"; the sort costs ~1 ms per 2,000 rows)."""
    n, bands = buckets.shape
    dt = np.dtype([("nf", ">i2")] + _field("c", ">i4") + _field("band", ">i2")
                  + _field("bucket", ">i8") + _field("row", ">i8"))
    order = np.argsort(buckets, axis=0)  # each band's rows by bucket
    rec = np.empty((bands, n), dtype=dt)
    rec["nf"], rec["c_len"], rec["band_len"], rec["bucket_len"], rec["row_len"] = 4, 4, 2, 8, 8
    rec["c"] = collection_id
    rec["band"] = np.arange(bands, dtype=np.int16)[:, None]
    rec["bucket"] = np.take_along_axis(buckets, order, axis=0).T
    rec["row"] = row_ids[order].T
    return HEADER + rec.tobytes() + TRAILER


def signatures(collection_id: int, keys: Sequence[str], row_ids: np.ndarray, md5s: Sequence[uuid.UUID],
               text_hashes: np.ndarray, counts: np.ndarray, sigs: np.ndarray, buckets: np.ndarray) -> bytes:
    """COPY stream for ``signatures (collection_id, row_id, source_md5, text_hash, feature_count,
    signature, buckets, row_key)``: ``signature`` is the sketch of ``sigs`` (the low 16 bits of each
    value, in order, as a bit string). Rows with ``counts == 0`` get an empty sketch and no buckets."""
    n, k = sigs.shape
    bands = buckets.shape[1]
    fixed = np.dtype([("nf", ">i2")] + _field("c", ">i4") + _field("row", ">i8") + [("md5_len", ">i4")]
                     + [("md5", "S16")] + _field("th", ">i8") + _field("fc", ">i4"))
    head = np.empty(n, dtype=fixed)
    head["nf"], head["c_len"], head["row_len"], head["md5_len"], head["th_len"], head["fc_len"] = 8, 4, 8, 16, 8, 4
    head["c"], head["row"], head["th"], head["fc"] = collection_id, row_ids, text_hashes, counts
    head["md5"] = [m.bytes for m in md5s]
    arrays = np.empty(n, dtype=np.dtype([("s_len", ">i4"), ("s_bits", ">i4"), ("s", ">u2", (k,))]
                                        + _array_fields("b", ">i8", bands)))
    arrays["s_len"], arrays["s_bits"] = 4 + 2 * k, SKETCH_BITS * k
    arrays["s"] = sigs & 0xFFFF
    _fill_array(arrays, "b", buckets, INT8_OID, 8)
    head_b, arr_b = memoryview(head.tobytes()), memoryview(arrays.tobytes())
    hw, aw = fixed.itemsize, arrays.dtype.itemsize
    empty = struct.pack(">ii", 4, 0) + _empty_array(INT8_OID)
    parts = [HEADER]
    for i, key in enumerate(keys):
        raw = key.encode("utf-8")
        parts.append(head_b[i * hw:(i + 1) * hw])
        parts.append(arr_b[i * aw:(i + 1) * aw] if counts[i] else empty)
        parts.append(struct.pack(">i", len(raw)) + raw)
    parts.append(TRAILER)
    return b"".join(parts)


@contextmanager
def copy_into(conn: psycopg.Connection, table: str, columns: Sequence[str],
              binary: bool = True) -> Iterator[psycopg.Copy]:
    """``COPY pgdedup.<table> (columns) FROM STDIN`` in the caller's transaction.

    Why the detour: PostgreSQL refuses ``COPY FROM`` into a table whose row-level security
    applies to the current role (pgdedup's tables have policies; their owner is exempt). For such
    a role the rows are copied into a temp table and moved with one INSERT, which the policies
    check; for the owner it is a plain COPY. The temp table is made for the copy, under a name
    no one can foresee, and dropped after it: a table of a foreseeable name that another role
    left on the session (a pool shared between roles) could have a trigger, which would run with
    this role's rights.
    """
    target = sql.SQL("pgdedup.{}").format(sql.Identifier(table))
    direct = not conn.execute("SELECT pg_catalog.row_security_active(%s)", (f"pgdedup.{table}",)).fetchone()[0]
    staging = sql.Identifier(f"pgdedup_copy_{table}_{uuid.uuid4().hex}")
    if not direct:
        conn.execute(sql.SQL("CREATE TEMP TABLE {s} (LIKE {t}) ON COMMIT DROP").format(s=staging, t=target))
    cols = sql.SQL(", ").join(map(sql.Identifier, columns))
    into = target if direct else sql.SQL("pg_temp.{}").format(staging)
    fmt = sql.SQL(" (FORMAT BINARY)" if binary else "")
    with conn.cursor().copy(sql.SQL("COPY {} ({}) FROM STDIN{}").format(into, cols, fmt)) as copy:
        yield copy
    if not direct:
        conn.execute(sql.SQL("INSERT INTO {t} ({c}) SELECT {c} FROM pg_temp.{s}; DROP TABLE pg_temp.{s}")
                     .format(t=target, c=cols, s=staging))
