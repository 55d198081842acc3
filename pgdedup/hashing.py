"""Hash functions shared by features, signatures and bands.

Tokens get a vectorised polynomial hash over their UTF-8 bytes (see ``word_hashes``); texts,
row keys and band buckets are hashed with xxhash (XXH3, 64 bit; band buckets by a numpy
implementation of it, ``bucket_hashes``). Everything downstream mixes
64-bit integers in numpy with the splitmix64 finaliser, a bijection on 64 bits with full avalanche: cheap, vectorised and stable across platforms.
numpy's uint64 arithmetic wraps modulo 2**64, which is exactly what these mixers need.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xxhash

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser of a uint64 array (a bijection, so distinct inputs stay distinct)."""
    z = x.astype(np.uint64, copy=True)
    z ^= z >> np.uint64(30)
    z *= _M1
    z ^= z >> np.uint64(27)
    z *= _M2
    z ^= z >> np.uint64(31)
    return z


def seeded(x: np.ndarray, seed: int, salt: int) -> np.ndarray:
    """A hash of ``x`` that depends on (seed, salt): independent families for independent jobs."""
    key = np.uint64((seed * 0x100000001B3 + salt * 0x9E3779B1) & 0xFFFFFFFFFFFFFFFF)
    return mix64(x.astype(np.uint64) * _GOLDEN + key)


_BASE = np.uint64(0x100000001B3 | 1)  # odd, so invertible modulo 2**64
_BASE_INV = np.uint64(pow(int(_BASE), -1, 1 << 64))


#: Texts are hashed in blocks of about this many characters (``features.features``), so that
#: a block's temporary arrays (8 bytes a character for the prefix sums) fit in a core's L2
#: cache: measured on 5,000 texts of ~2.7 KB, word hashes took 87 ms in blocks of 2**20
#: characters, 72 ms at 2**18, 67 ms at 2**17 and 68-75 ms below.
BLOCK_CHARS = 1 << 17
_POWERS: dict[int, np.ndarray] = {}


def _powers(base: np.uint64, n: int) -> np.ndarray:
    """base**0 .. base**(n-1) modulo 2**64; tables up to a block's size are cached for reuse,
    a larger one (a single huge document) is made for that call only."""
    have = _POWERS.get(int(base))
    if have is not None and len(have) >= n:
        return have[:n]
    out = np.full(n, base, dtype=np.uint64)
    out[0] = 1
    out = np.cumprod(out, dtype=np.uint64)  # wraps modulo 2**64, as intended
    if n <= 4 * BLOCK_CHARS:
        _POWERS[int(base)] = out
    return out


def word_hashes(spaced_docs: Sequence[str], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(64-bit hash of every token of every document, in order; number of tokens per document).

    Tokens are the space-separated words of each document (see ``normalise.spaced``). The block
    is encoded once, token boundaries come from numpy, and every token is hashed at once by a
    polynomial over its bytes from prefix sums — hash(bytes s..e-1) = (S[e] - S[s]) · B^(e-1)
    with S[i] = Σ_{j<i} byte_j · B^-j, modulo 2**64 (B odd, so invertible) — then mixed with
    the seed by splitmix64. No Python code runs per token.

    Why not xxhash per distinct token: finding the distinct tokens of a
    chunk (np.unique + searchsorted, or a dict) cost ~0.45 s per 4,000 documents of 3 KB,
    more than all the other steps together, and the polynomial already is a hash of the whole
    token. xxhash (XXH3) still makes the text hashes and the band buckets. Known weakness: mod
    2**64 polynomials collide on Thue-Morse strings of >2,000 bytes; two such tokens would
    merely count as one feature.
    """
    data = ("\n".join(spaced_docs) + "\n").encode("utf-8")
    buf = np.frombuffer(data, dtype=np.uint8)
    sep = (buf == 32) | (buf == 10)
    before = np.concatenate(([True], sep[:-1]))
    after = np.concatenate((sep[1:], [True]))
    starts = np.flatnonzero(~sep & before)
    ends = np.flatnonzero(~sep & after) + 1
    doc = np.searchsorted(np.flatnonzero(buf == 10), starts)  # newlines before a token = its document number
    lengths = np.bincount(doc, minlength=len(spaced_docs)).astype(np.int64)
    prefix = np.zeros(len(buf) + 1, dtype=np.uint64)
    np.cumsum(buf.astype(np.uint64) * _powers(_BASE_INV, len(buf)), out=prefix[1:])
    finger = (prefix[ends] - prefix[starts]) * _powers(_BASE, len(buf))[ends - 1]
    finger ^= (ends - starts).astype(np.uint64) << np.uint64(56)
    return seeded(finger, seed, salt=0), lengths


def text_hash(normalised: str) -> int:
    """Signed 64-bit xxh3 of a normalised text: equal texts are exact duplicates."""
    return xxhash.xxh3_64_intdigest(normalised.encode("utf-8")) - (1 << 63)


def partition_salts(values: Sequence[str | None]) -> np.ndarray:
    """uint64 xxh3 of each partition value (NULL is a value of its own, unlike any string)."""
    return np.fromiter((xxhash.xxh3_64_intdigest(b"\0" if v is None else b"\1" + v.encode("utf-8"))
                        for v in values), dtype=np.uint64, count=len(values))


def salted(hashes: np.ndarray, salts: np.ndarray) -> np.ndarray:
    """int64 ``hashes`` mixed with uint64 ``salts`` (broadcast): equal hashes under different salts
    differ, so rows of different partitions never share a text hash or a bucket."""
    return mix64(hashes.view(np.uint64) ^ salts).view(np.int64)


def row_ids(keys: Sequence[str]) -> np.ndarray:
    """Signed 64-bit xxh3 of each row key: a row's id depends on its key only, so parallel
    workers and reruns agree without a shared sequence. Two keys of one collection sharing an
    id (probability ~n²/2**65: 3e-8 for a million rows) is reported as an error, never merged."""
    return np.fromiter((xxhash.xxh3_64_intdigest(k.encode("utf-8")) - (1 << 63) for k in keys),
                       dtype=np.int64, count=len(keys))


def bucket_hashes(data: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """Signed 64-bit xxh3 (XXH3-64 with a seed) of each row of ``data`` (uint8, shape (..., length))
    with the matching seed of ``seeds`` (uint64, broadcast against ``data.shape[:-1]``), so band
    buckets are stable across runs and machines: exactly ``xxhash.xxh3_64_intdigest(row, seed)``
    minus 2**63.

    Lengths 4 to 128 bytes (bands of 1 to 32 values) are hashed in numpy, all rows at once
    (``_xxh3_4to128``); other lengths row by row through the xxhash package, whose per-row calls
    (~0.2 us each, 320,000 for 20,000 texts at 16 bands) took 78 ms of ~1.3 s of signing
    against 17 ms in numpy.
    """
    length = data.shape[-1]
    seeds = np.broadcast_to(np.asarray(seeds, dtype=np.uint64), data.shape[:-1])
    if 4 <= length <= 128:
        return _xxh3_4to128(data, seeds).view(np.int64) ^ np.int64(-(1 << 63))  # minus 2**63, mod 2**64
    flat, flat_seeds = data.reshape(seeds.size, length), seeds.reshape(-1)
    return np.fromiter((xxhash.xxh3_64_intdigest(flat[i].tobytes(), int(flat_seeds[i])) - (1 << 63)
                        for i in range(len(flat))), dtype=np.int64, count=len(flat)).reshape(data.shape[:-1])


#: The first 128 bytes of XXH3's default secret (xxhash.h, XXH3_kSecret): all that rows of up
#: to 128 bytes read.
_SECRET = bytes.fromhex(
    "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671fcb79e64eccc0e578825ad07dccff7221"
    "b8084674f743248ee03590e6813a264c3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
    "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364")
_P64_1 = np.uint64(0x9E3779B185EBCA87)
_MX1 = np.uint64(0x165667919E3779F9)
_MX2 = np.uint64(0x9FB21C651E98DF25)
_LOW32 = np.uint64(0xFFFFFFFF)


def _secret64(offset: int) -> np.uint64:
    return np.uint64(int.from_bytes(_SECRET[offset:offset + 8], "little"))


def _le(data: np.ndarray, offset: int, size: int = 8) -> np.ndarray:
    """The little-endian word of ``size`` bytes (4 or 8) at byte ``offset`` of each row, as uint64."""
    return np.ascontiguousarray(data[..., offset:offset + size]).view(f"<u{size}")[..., 0].astype(np.uint64)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _mul128_fold64(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Low 64 bits XOR high 64 bits of the 128-bit product a·b, from 32-bit halves."""
    a0, a1, b0, b1 = a & _LOW32, a >> np.uint64(32), b & _LOW32, b >> np.uint64(32)
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    middle = (p00 >> np.uint64(32)) + (p01 & _LOW32) + (p10 & _LOW32)
    low = (p00 & _LOW32) | (middle << np.uint64(32))
    high = p11 + (p01 >> np.uint64(32)) + (p10 >> np.uint64(32)) + (middle >> np.uint64(32))
    return low ^ high


def _avalanche(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint64(37))
    h = h * _MX1
    return h ^ (h >> np.uint64(32))


def _mix16(data: np.ndarray, offset: int, secret: int, seeds: np.ndarray) -> np.ndarray:
    return _mul128_fold64(_le(data, offset) ^ (_secret64(secret) + seeds),
                          _le(data, offset + 8) ^ (_secret64(secret + 8) - seeds))


def _xxh3_4to128(data: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """XXH3-64 (xxhash 0.8) of rows of 4 to 128 bytes, as uint64: its len_4to8, len_9to16 and
    len_17to128 paths, which use the default secret and the seed directly."""
    n = data.shape[-1]
    length = np.uint64(n)
    if n <= 8:
        seeds = seeds ^ ((seeds & _LOW32).astype(np.uint32).byteswap().astype(np.uint64) << np.uint64(32))
        keyed = (_le(data, n - 4, 4) + (_le(data, 0, 4) << np.uint64(32))) ^ ((_secret64(8) ^ _secret64(16)) - seeds)
        h = keyed ^ _rotl(keyed, 49) ^ _rotl(keyed, 24)  # rrmxmx
        h = h * _MX2
        h = h ^ ((h >> np.uint64(35)) + length)
        h = h * _MX2
        return h ^ (h >> np.uint64(28))
    if n <= 16:
        low = _le(data, 0) ^ ((_secret64(24) ^ _secret64(32)) + seeds)
        high = _le(data, n - 8) ^ ((_secret64(40) ^ _secret64(48)) - seeds)
        swapped = low.byteswap()
        return _avalanche(length + swapped + high + _mul128_fold64(low, high))
    acc = np.full(data.shape[:-1], length, dtype=np.uint64) * _P64_1
    for start, secret in ((48, 96), (32, 64), (16, 32)):  # the rounds that longer rows add
        if n > 2 * start:
            acc += _mix16(data, start, secret, seeds) + _mix16(data, n - start - 16, secret + 16, seeds)
    acc += _mix16(data, 0, 0, seeds) + _mix16(data, n - 16, 16, seeds)
    return _avalanche(acc)
