"""The columnar fast path: records that travel in Arrow arrays instead of one Python object
each.

``ssc.textBatchStream(directory)`` reads the same files as ``textFileStream`` (the same
lines, see :mod:`dstream.sources.textbatches`), but each task reads its part of a file in
the Python worker into one ``pyarrow.StringArray``. A :class:`BatchStream` then offers
operators that work on whole arrays (``mapBatches``, ``filterBatches`` and built-in text
operators computed by ``pyarrow.compute``), and leaves the fast path where records must be
Python objects again: ``countByValue`` (counted per task before the shuffle, so a
shuffle carries one pair per distinct value and task) and ``records``.

Every operator here gives exactly what the per-record program gives::

    lines.filter(lambda l: "x" in l).count()   ==  batches.contains("x").count()
    lines.flatMap(str.split).countByValue()    ==  batches.words().countByValue()
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from dstream.functions import guard
from dstream.operators.stateless import total

if TYPE_CHECKING:
    import pyarrow as pa

    from dstream.dstream import DStream

__all__ = ["BatchStream"]


def _as_array(value: Any, label: str, what: str) -> pa.Array:
    import pyarrow as pa

    if isinstance(value, pa.ChunkedArray):
        return value.combine_chunks()
    if isinstance(value, pa.Array):
        return value
    raise TypeError(
        f"{label} returned {type(value).__name__}, but {what} must be a pyarrow Array; "
        "build it with pyarrow.compute functions or pyarrow.array(...)"
    )


def _value_counts(batches: Iterable[pa.Array]) -> Iterator[tuple[Any, int]]:
    import pyarrow as pa

    arrays = [b for b in batches if len(b)]
    if not arrays:
        return iter(())
    if len({a.type for a in arrays}) > 1:
        arrays = [a.cast(pa.large_string()) if pa.types.is_string(a.type) else a for a in arrays]
    # A hash aggregation (one thread: the task has its core) counts ~1.4x faster than
    # pc.value_counts here.
    table = pa.table({"v": pa.chunked_array(arrays)})
    counts = table.group_by("v", use_threads=False).aggregate([([], "count_all")])
    return zip(counts["v"].to_pylist(), counts["count_all"].to_pylist(), strict=True)


def _word_counts(lines: Iterable[pa.Array]) -> Iterator[tuple[Any, int]]:
    """``_value_counts`` of ``_words`` of each array, without filtering out the empty
    strings first: they are one entry of the counts, dropped there."""
    return ((w, c) for w, c in _value_counts(map(_split_words, lines)) if w)


def _contains_mask(batch: pa.Array, substring: str) -> pa.Array:
    """``[substring in line for line in batch]`` as a boolean array.

    A byte search over the array's values buffer (``re`` on the buffer: literal search, about
    4x Arrow's per-string match_substring when few lines match), each hit mapped to its line
    by the offsets. The values have no separators, so a hit may run from one line into the
    next: such a hit is not a match, and the lines it covered after its first are checked
    on their own (the scan went past where a real occurrence could start in them).
    """
    import bisect

    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    needle = substring.encode()
    n = len(batch)
    plain = pa.types.is_string(batch.type) or pa.types.is_large_string(batch.type)
    if not needle or not n or not plain or batch.null_count:
        return pc.match_substring(batch, substring)
    width = np.int64 if pa.types.is_large_string(batch.type) else np.int32
    offsets: np.ndarray = np.frombuffer(batch.buffers()[1], dtype=width)[
        batch.offset : batch.offset + n + 1
    ]
    values = memoryview(batch.buffers()[2])
    lo, hi = int(offsets[0]), int(offsets[-1])
    hits: list[int] = []
    budget = max(1024, n // 8)
    for m in re.compile(re.escape(needle)).finditer(values, lo, hi):
        hits.append(m.start())
        if len(hits) > budget:  # most lines match: Arrow's kernel is as fast then
            return pc.match_substring(batch, substring)
    at = np.asarray(hits, dtype=np.int64)
    line = np.searchsorted(offsets, at, side="right") - 1
    inside = at + len(needle) <= offsets[line + 1]
    mask = np.zeros(n, dtype=bool)
    mask[line[inside]] = True
    bounds: list[int] | None = None
    for p, k in zip(at[~inside].tolist(), line[~inside].tolist(), strict=True):
        if bounds is None:
            bounds = offsets.tolist()
        last = bisect.bisect_right(bounds, p + len(needle) - 1) - 1
        for j in range(k + 1, min(last, n - 1) + 1):
            if not mask[j] and needle in values[bounds[j] : bounds[j + 1]].tobytes():
                mask[j] = True
    return pa.array(mask, type=pa.bool_())


def _ascii_split_is_exact(batch: pa.Array) -> bool:
    """True when ASCII whitespace splitting gives str.split()'s words for every line: the
    bytes are ASCII and none is \\x1c-\\x1f (whitespace to Python, not to Arrow's ASCII
    kernel). Looks at the whole values buffer (a superset of a sliced array's bytes)."""
    import numpy as np

    if batch.offset != 0 or len(batch.buffers()) != 3 or batch.buffers()[2] is None:
        return False
    values = np.frombuffer(batch.buffers()[2], dtype=np.uint8)
    step = 1 << 20  # in cache-sized pieces: no temporaries as large as the batch
    for i in range(0, len(values), step):
        piece = values[i : i + step]
        if piece.max() >= 0x80 or np.count_nonzero(np.subtract(piece, 0x1C, dtype=np.uint8) < 4):
            return False
    return True


def _split_words(batch: pa.Array) -> pa.Array:
    """Each line's whitespace-separated pieces, flattened; empty strings where str.split()
    has none (leading, trailing and repeated whitespace)."""
    import pyarrow.compute as pc

    # utf8_split_whitespace splits where str.split() does (checked for every code point);
    # the ASCII kernel is twice as fast and splits the same on the bytes it accepts.
    if _ascii_split_is_exact(batch):
        return pc.ascii_split_whitespace(batch).flatten()
    return pc.utf8_split_whitespace(batch).flatten()


def _words(batch: pa.Array) -> pa.Array:
    import pyarrow.compute as pc

    words = _split_words(batch)
    return words.filter(pc.greater(pc.binary_length(words), 0))


class BatchStream:
    """A stream whose records travel in Arrow arrays, several per interval (one or more per
    task). ``dstream`` is the underlying DStream of arrays, for ``foreachRDD`` and the other
    DStream operators that take whole arrays."""

    def __init__(self, dstream: DStream[Any], words_of: DStream[Any] | None = None) -> None:
        self.dstream = dstream
        # words(): the stream of lines they come from (countByValue counts them directly).
        self._words_of = words_of

    def __repr__(self) -> str:
        return f"BatchStream({self.dstream!r})"

    # ---- array to array ---------------------------------------------------------------------
    def mapBatches(self, f: Callable[[pa.Array], pa.Array]) -> BatchStream:
        """Apply ``f`` to each array; it returns an array (any length, any type).

        >>> batches.mapBatches(pyarrow.compute.utf8_upper)  # doctest: +SKIP
        """
        uf = self.dstream._user("mapBatches", f)
        g, label = guard(uf.fn, uf.label), uf.label

        def apply(batch: pa.Array) -> pa.Array:
            return _as_array(g(batch), label, "its result")

        return BatchStream(self.dstream._rdd_op("mapBatches", lambda rdd: rdd.map(apply), [uf]))

    def filterBatches(self, f: Callable[[pa.Array], pa.Array]) -> BatchStream:
        """Keep the records where the boolean array ``f(batch)`` is true (null drops).

        >>> batches.filterBatches(lambda a: pc.greater(pc.utf8_length(a), 80))  # doctest: +SKIP
        """
        uf = self.dstream._user("filterBatches", f)
        g, label = guard(uf.fn, uf.label), uf.label

        def apply(batch: pa.Array) -> pa.Array:
            import pyarrow as pa

            mask = _as_array(g(batch), label, "its mask")
            if mask.type != pa.bool_() or len(mask) != len(batch):
                raise TypeError(
                    f"{label} returned a {mask.type} array of length {len(mask)} for a batch "
                    f"of {len(batch)} records; a mask is one bool per record, e.g. "
                    "pyarrow.compute.match_substring(batch, 'x')"
                )
            return batch.filter(mask)

        return BatchStream(self.dstream._rdd_op("filterBatches", lambda rdd: rdd.map(apply), [uf]))

    # ---- built-in text operators (pyarrow.compute, no Python per record) --------------------
    def contains(self, substring: str) -> BatchStream:
        """Keep the lines that contain ``substring`` (as ``substring in line``)."""
        if not isinstance(substring, str):
            raise TypeError(
                f"contains() substring {substring!r} must be a str; for a predicate on each "
                "line use filterBatches(f) or records().filter(f)"
            )

        def apply(batch: pa.Array) -> pa.Array:
            return batch.filter(_contains_mask(batch, substring))

        return BatchStream(self.dstream._rdd_op("contains", lambda rdd: rdd.map(apply)))

    def words(self) -> BatchStream:
        """Each line's words, as ``str.split()`` gives them (whitespace-separated)."""
        words = self.dstream._rdd_op("words", lambda rdd: rdd.map(_words))
        return BatchStream(words, words_of=self.dstream)

    # ---- back to per-record streams ---------------------------------------------------------
    def count(self) -> DStream[int]:
        """The number of records of each interval (one record, 0 for an empty interval)."""
        return self.dstream._rdd_op("count", lambda rdd: total(rdd.map(len)))

    def countByValue(self, numPartitions: int | None = None) -> DStream[tuple[Any, int]]:
        """``(value, count)`` for every distinct value of each interval, counted within each
        task first (an Arrow hash aggregation) so only one pair per value and task is shuffled."""
        n = self.dstream._num_partitions(numPartitions, "countByValue")
        if self._words_of is not None:  # words().countByValue(): one pass less
            return self._words_of._rdd_op(
                "words().countByValue",
                lambda rdd: rdd.mapPartitions(_word_counts).reduceByKey(operator.add, n),
            )
        return self.dstream._rdd_op(
            "countByValue",
            lambda rdd: rdd.mapPartitions(_value_counts).reduceByKey(operator.add, n),
        )

    def countByValueAndWindow(
        self, windowDuration: object, slideDuration: object = None, numPartitions: int | None = None
    ) -> DStream[tuple[Any, int]]:
        """``(value, count)`` of the distinct values over a sliding window, kept incrementally
        (as ``DStream.countByValueAndWindow``): each task counts its values first (an Arrow
        hash aggregation), and the window folds those counts in straight off the shuffle."""
        if self._words_of is not None:
            counts = self._words_of._rdd_op(
                "words().countByValueAndWindow", lambda rdd: rdd.mapPartitions(_word_counts)
            )
        else:
            counts = self.dstream._rdd_op(
                "countByValueAndWindow", lambda rdd: rdd.mapPartitions(_value_counts)
            )
        return counts.reduceByKeyAndWindow(
            operator.add, operator.sub, windowDuration, slideDuration, numPartitions
        )

    def records(self) -> DStream[Any]:
        """The records as Python objects (``str`` for lines): the per-record operators
        from here on."""
        return self.dstream._rdd_op(
            "records", lambda rdd: rdd.flatMap(lambda batch: batch.to_pylist())
        )
