"""HyperLogLog (Flajolet et al. 2007): distinct counts in a fixed, mergeable sketch.

A sketch of precision ``p`` is ``m = 2**p`` one-byte registers, held as ``bytes`` (so that it
pickles as a builtin and executors need no class of ours). Each value is hashed to 64 bits
(BLAKE2b, the same on every machine and run, unlike Python's salted ``hash``): the first
``p`` bits choose a register, which keeps the largest "position of the first 1 bit" seen
among the remaining ``64 - p`` bits.

* Merging two sketches (register-wise max) gives exactly the sketch of the union of their
  inputs, so per-interval sketches merge into a sliding window's, and per-partition ones into
  an interval's.
* The estimate's relative standard error is ``1.04 / sqrt(m)``: 1.6 % at p = 12 (4 KiB per
  sketch), 3.25 % at p = 10. Small counts (below ``2.5 m``) use linear counting over the
  empty registers, which is far more accurate there. With 64-bit hashes no large-range
  correction is needed.

The register-wise max works on whole sketches as big integers (SWAR: every byte lane gets a
guard bit; registers never exceed 65 < 128), which keeps a merge of 4 KiB sketches at a few
microseconds in pure Python.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable

__all__ = ["add", "estimate", "merge", "new", "relative_error", "sketch_of"]

MIN_PRECISION, MAX_PRECISION = 4, 16


def _check(p: int) -> None:
    if not isinstance(p, int) or not MIN_PRECISION <= p <= MAX_PRECISION:
        raise ValueError(
            f"HyperLogLog precision {p!r} must be an integer from {MIN_PRECISION} to "
            f"{MAX_PRECISION} (2**p registers; 12 gives a 1.6 % standard error in 4 KiB)"
        )


def relative_error(p: int) -> float:
    """The estimate's relative standard error at precision ``p``: ``1.04 / sqrt(2**p)``."""
    _check(p)
    return 1.04 / math.sqrt(1 << p)


def new(p: int) -> bytearray:
    """An empty sketch to add to (mutable); ``bytes(sketch)`` to ship or merge it."""
    _check(p)
    return bytearray(1 << p)


def _hash64(value: object) -> int:
    data = value if isinstance(value, bytes) else str(value).encode()
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def add(sketch: bytearray, value: object) -> None:
    """Add one value (an int, a str, or bytes; values of equal ``str()`` count once)."""
    p = len(sketch).bit_length() - 1
    h = _hash64(value)
    index = h >> (64 - p)
    rest = h & ((1 << (64 - p)) - 1)
    rank = (64 - p) - rest.bit_length() + 1
    sketch[index] = max(sketch[index], rank)


def sketch_of(values: Iterable[object], p: int) -> bytes:
    """The sketch of ``values``."""
    s = new(p)
    for v in values:
        add(s, v)
    return bytes(s)


_GUARDS: dict[int, tuple[int, int]] = {}


def _lanes(size: int) -> tuple[int, int]:
    """(a 0x80 guard bit in every byte, 0x01 in every byte) for ``size``-byte integers."""
    lanes = _GUARDS.get(size)
    if lanes is None:
        lanes = (int.from_bytes(b"\x80" * size, "big"), int.from_bytes(b"\x01" * size, "big"))
        _GUARDS[size] = lanes
    return lanes


def merge(a: bytes, b: bytes) -> bytes:
    """The sketch of the union of the inputs of ``a`` and ``b`` (register-wise max)."""
    if len(a) != len(b):
        raise ValueError(
            f"HyperLogLog sketches of {len(a)} and {len(b)} registers cannot be merged: "
            "build every sketch of one metric with the same precision"
        )
    size = len(a)
    guard, ones = _lanes(size)
    x, y = int.from_bytes(a, "big"), int.from_bytes(b, "big")
    # In every byte lane, (x | 0x80) - y keeps its guard bit iff x >= y (no borrow crosses
    # lanes, since each lane of x | 0x80 is at least 0x80 > y's lane).
    ge = ((x | guard) - y) & guard
    mask = (ge >> 7) * 0xFF  # 0xFF in the lanes where x >= y; lanes never carry
    return ((x & mask) | (y & ~mask & (ones * 0xFF))).to_bytes(size, "big")


def estimate(sketch: bytes | bytearray) -> int:
    """The estimated number of distinct values added (rounded)."""
    m = len(sketch)
    if m < (1 << MIN_PRECISION) or m & (m - 1):
        raise ValueError(f"a HyperLogLog sketch has 2**p registers, got {m} bytes")
    data = bytes(sketch)
    total = 0.0
    top = max(data)
    for r in range(top + 1):
        n = data.count(r)
        if n:
            total += n * 2.0**-r
    alpha = 0.7213 / (1 + 1.079 / m)
    raw = alpha * m * m / total
    zeros = data.count(0)
    if raw <= 2.5 * m and zeros:
        return round(m * math.log(m / zeros))
    return round(raw)
