"""Lines of text files as Arrow arrays, read inside the Python worker (the columnar fast
path of ``ssc.textBatchStream``).

``textFileStream`` reads lines in the JVM and sends each one to Python as its own record;
at high rates that per-record pickling and dispatch is most of an interval's cost. Here a
task gets only ``(path, split, splits)``, reads its byte range of the file itself (local
file system, memory-mapped, or WebHDFS for ``hdfs://``) and builds one ``pyarrow.StringArray``
of its lines: a few byte searches and Arrow's ``split_pattern`` for ``\\n``-terminated
text, vectorised numpy passes when ``\\r`` terminators occur. No Python object per line.

Lines are exactly Hadoop's ``LineRecordReader``'s (what ``textFile`` returns): terminated by
``\\n``, ``\\r\\n`` or a lone ``\\r``, terminators dropped, no empty line after a final
terminator, a UTF-8 byte order mark at the start of a file skipped. A file is cut into
``splits`` byte ranges; the range ``[start, end)`` owns the lines that *begin* in it, so
the ranges' lines, in order, are the file's lines. Invalid UTF-8 becomes U+FFFD, as
Hadoop's ``Text.toString`` does (the number of U+FFFD per malformed sequence follows
Python's decoder, which may differ from Java's).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

__all__ = ["read_split", "read_text_split", "split_range"]

_BOM = b"\xef\xbb\xbf"
_READ_MORE = 1 << 16  # bytes read past a range's end while its last line continues


def split_range(size: int, split: int, splits: int) -> tuple[int, int]:
    """Byte range ``[start, end)`` of split ``split`` of ``splits`` over ``size`` bytes."""
    return size * split // splits, size * (split + 1) // splits


def _terminators(buf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each line terminator in ``buf`` begins, and where the line after it begins.

    A ``\\n`` right after a ``\\r`` belongs to that ``\\r``'s terminator. A ``\\r`` as
    the last byte of ``buf`` counts as a lone ``\\r``: callers read one byte past what they
    need, so that only ever affects lines they do not own.
    """
    import numpy as np

    cr = buf == 13
    nl = buf == 10
    nl[1:] &= ~cr[:-1]
    begins = np.flatnonzero(cr | nl)
    crlf = np.zeros(len(begins), dtype=bool)
    inside = begins + 1 < len(buf)
    crlf[inside] = cr[begins[inside]] & (buf[begins[inside] + 1] == 10)
    return begins, begins + 1 + crlf


def lines_array(data: bytes, starts: np.ndarray, ends: np.ndarray) -> pa.Array:
    """One string per ``data[starts[i]:ends[i]]`` (ascending, non-overlapping)."""
    import numpy as np
    import pyarrow as pa

    n = len(starts)
    if n == 0:
        return _empty()
    buf = np.frombuffer(data, dtype=np.uint8)
    # Keep the bytes inside some [start, end): +1 at each start, -1 at each end.
    edges = np.zeros(len(buf) + 1, dtype=np.int8)
    edges[starts] += 1  # starts are distinct, and so are ends
    edges[ends] -= 1
    keep = np.cumsum(edges[:-1], dtype=np.int8).astype(bool)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(ends - starts, out=offsets[1:])
    large = offsets[-1] >= 2**31
    array = (pa.LargeStringArray if large else pa.StringArray).from_buffers(
        n,
        pa.py_buffer(offsets if large else offsets.astype(np.int32)),
        pa.py_buffer(buf[keep].tobytes()),
    )
    try:
        array.validate(full=True)
    except pa.ArrowInvalid:
        # Invalid UTF-8: replace as textFile does (rare; per line in Python).
        texts = [
            data[s:e].decode("utf-8", errors="replace")
            for s, e in zip(starts.tolist(), ends.tolist(), strict=True)
        ]
        return pa.array(texts, type=pa.large_string() if large else pa.string())
    return array


def read_split(
    size: int, split: int, splits: int, read_range: Callable[[int, int], bytes]
) -> pa.Array:
    """The lines that begin in split ``split`` of ``splits`` of a file of ``size`` bytes;
    ``read_range(offset, length)`` reads the file (it may return fewer bytes at its end)."""
    import numpy as np

    start, end = split_range(size, split, splits)
    if start >= end:
        return _empty()
    # From one byte before the range (is `start` a line's beginning?) to one byte past it
    # (a \r at end-1 may be half of \r\n), then more while the last line runs on.
    lo = max(0, start - 1)
    hi = min(size, end + 1)
    data = b""
    while len(data) < hi - lo:  # readers may return short reads
        more = read_range(lo + len(data), hi - lo - len(data))
        if not more:
            break
        data += more
    lines, data = _lf_split(data, lo, start, end, size, read_range)
    if lines is not None:
        return lines
    while True:
        buf = np.frombuffer(data, dtype=np.uint8)
        begins, after = _terminators(buf)
        begins = begins + lo
        after = after + lo
        line_starts = np.concatenate([[0], after]) if lo == 0 else after
        # Each line runs to the terminator that follows its beginning.
        owned = (line_starts >= start) & (line_starts < end) & (line_starts < size)
        if not owned.any():
            return _empty()
        first = int(np.argmax(owned))
        last = len(owned) - 1 - int(np.argmax(owned[::-1]))
        # Line k (counting from the first line start found) ends where terminator k begins
        # when the data starts at the file's beginning, else where terminator k + 1 does.
        shift = 0 if lo == 0 else 1
        if last + shift < len(begins) or lo + len(data) >= size:  # the last line ended
            break
        more = read_range(lo + len(data), _READ_MORE)
        if not more:
            break
        data += more
    line_ends = np.append(begins, lo + len(data))[first + shift : last + shift + 1]
    starts = line_starts[first : last + 1]
    if lo == 0 and start == 0 and data[: len(_BOM)] == _BOM:
        starts = starts.copy()
        starts[0] = min(len(_BOM), int(line_ends[0]))
    return lines_array(data, starts - lo, line_ends - lo)


def _lf_split(
    data: Any, lo: int, start: int, end: int, size: int, read_range: Callable[[int, int], bytes]
) -> tuple[pa.Array | None, Any]:
    """``read_split`` for lines that end in ``\\n`` only: find the owned span with byte
    searches and let Arrow split it. ``data`` (bytes, or a whole file mapped into memory)
    holds the file from byte ``lo`` (``start - 1``, or 0) to at least ``end + 1``. Returns
    (None, the data read so far) if a ``\\r`` is among the bytes that decide the lines."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if start == 0:
        while len(data) < min(size, len(_BOM)):  # enough to see a byte order mark
            more = read_range(len(data), len(_BOM) - len(data))
            if not more:
                break
            data += more
        first = len(_BOM) if data[: len(_BOM)] == _BOM else 0
    else:
        nl = data.find(b"\n", start - 1 - lo)
        if nl == -1 or lo + nl + 1 >= end:  # no line begins in the range, unless at a \r
            found_cr = data.find(b"\r", start - 1 - lo, end - lo) != -1
            return (None if found_cr else _empty()), data
        first = nl + 1
    # The last owned line ends at the first \n at or after end - 1 (a \n at end - 1 ends
    # the line before `end`; the line after it is the next split's).
    stop = data.find(b"\n", max(first, end - 1 - lo))
    while stop == -1 and lo + len(data) < size:
        more = read_range(lo + len(data), _READ_MORE)
        if not more:
            break
        searched = len(data)
        data += more
        stop = data.find(b"\n", searched)
    if stop == -1:
        stop = len(data)
    if data.find(b"\r", max(0, start - 1 - lo), stop) != -1:
        return None, data
    span = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(),
        1,
        [None, pa.py_buffer(struct.pack("<qq", first, stop)), pa.py_buffer(data)],
    )
    lines = pc.split_pattern(span, b"\n").flatten()  # new buffers: a mapped file can go
    del span
    kind = pa.string() if stop - first < 2**31 else pa.large_string()
    try:
        return lines.cast(kind), data
    except pa.ArrowInvalid:  # invalid UTF-8: replace as textFile does (rare; per line)
        texts = [line.decode("utf-8", errors="replace") for line in lines.to_pylist()]
        return pa.array(texts, type=kind), data


def _empty() -> pa.Array:
    import pyarrow as pa

    return pa.array([], type=pa.string())


def read_text_split(files: Any, path: str, split: int, splits: int) -> pa.Array:
    """Split ``split`` of ``splits`` of ``path`` through a task-side file handle (mapped
    into memory when the handle can, read in ranges otherwise)."""
    mapped = files.open_map(path) if hasattr(files, "open_map") else None
    if mapped is None:
        size = files.size(path)
        return read_split(size, split, splits, lambda offset, n: files.read_range(path, offset, n))
    with mapped as view:  # Arrow splits the page cache's bytes in place
        size = len(view)

        def read_range(offset: int, n: int) -> bytes:
            return bytes(view[offset : offset + n])

        start, end = split_range(size, split, splits)
        if start >= end:
            return _empty()
        lines, _ = _lf_split(view, 0, start, end, size, read_range)
        if lines is None:  # \r terminators: the general reader, on a copy of the range
            lines = read_split(size, split, splits, read_range)
        return lines
