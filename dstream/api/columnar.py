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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dstream.api.stateless import total
from dstream.tasks.arrow_text import contains_mask, value_counts, word_counts, words_of

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
        g, label = uf.guarded(), uf.label

        def apply(batch: pa.Array) -> pa.Array:
            return _as_array(g(batch), label, "its result")

        return BatchStream(self.dstream._rdd_op("mapBatches", lambda rdd: rdd.map(apply), [uf]))

    def filterBatches(self, f: Callable[[pa.Array], pa.Array]) -> BatchStream:
        """Keep the records where the boolean array ``f(batch)`` is true (null drops).

        >>> batches.filterBatches(lambda a: pc.greater(pc.utf8_length(a), 80))  # doctest: +SKIP
        """
        uf = self.dstream._user("filterBatches", f)
        g, label = uf.guarded(), uf.label

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
            return batch.filter(contains_mask(batch, substring))

        return BatchStream(self.dstream._rdd_op("contains", lambda rdd: rdd.map(apply)))

    def words(self) -> BatchStream:
        """Each line's words, as ``str.split()`` gives them (whitespace-separated)."""
        words = self.dstream._rdd_op("words", lambda rdd: rdd.map(words_of))
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
                lambda rdd: rdd.mapPartitions(word_counts).reduceByKey(operator.add, n),
            )
        return self.dstream._rdd_op(
            "countByValue",
            lambda rdd: rdd.mapPartitions(value_counts).reduceByKey(operator.add, n),
        )

    def countByValueAndWindow(
        self, windowDuration: object, slideDuration: object = None, numPartitions: int | None = None
    ) -> DStream[tuple[Any, int]]:
        """``(value, count)`` of the distinct values over a sliding window, kept incrementally
        (as ``DStream.countByValueAndWindow``): each task counts its values first (an Arrow
        hash aggregation), and the window folds those counts in straight off the shuffle."""
        if self._words_of is not None:
            counts = self._words_of._rdd_op(
                "words().countByValueAndWindow", lambda rdd: rdd.mapPartitions(word_counts)
            )
        else:
            counts = self.dstream._rdd_op(
                "countByValueAndWindow", lambda rdd: rdd.mapPartitions(value_counts)
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
