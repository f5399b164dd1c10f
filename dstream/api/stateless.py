"""Stateless operators: each interval's RDD is a function of the parents' RDDs of that same
interval only. Every one of them is a composition over :class:`TransformedDStream` (or
:class:`UnionDStream`); user functions are wrapped by :func:`guard` so that a failure inside
a task names the operator and where the program called it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from dstream.api.common import CommonOps
from dstream.functions import (
    guard_partitions,
    positional_arity,
)
from dstream.streams.transformed import RecordsDStream, TransformedDStream, UnionDStream
from dstream.time import Time

if TYPE_CHECKING:
    from pyspark import RDD

    from dstream.dstream import DStream

T = TypeVar("T")

__all__ = ["StatelessOps"]


def _count_partition(iterator: Iterable[Any]) -> Iterator[int]:
    yield sum(1 for _ in iterator)


def total(counts: RDD[int]) -> RDD[int]:
    """The sum of ``counts`` as one element per interval, 0 for an empty one (as Spark's
    DStream.count)."""
    if counts.getNumPartitions() == 0:
        return counts.context.parallelize([0], 1)
    return counts.map(lambda c: (None, c)).reduceByKey(operator.add, 1).values()


def _count(rdd: RDD[Any]) -> RDD[int]:
    return total(rdd.mapPartitions(_count_partition))


class StatelessOps(CommonOps[T]):
    __slots__ = ()

    # ---- per-record and per-partition functions -------------------------------------------
    def map(self, f: Callable[[T], Any], preservesPartitioning: bool = False) -> DStream[Any]:
        """Apply ``f`` to every record.

        >>> stream.map(lambda line: line.upper())  # doctest: +SKIP
        """
        return self._records("map", f, preservesPartitioning)

    def flatMap(
        self, f: Callable[[T], Iterable[Any]], preservesPartitioning: bool = False
    ) -> DStream[Any]:
        """Apply ``f`` to every record and flatten the iterables it returns."""
        return self._records("flatMap", f, preservesPartitioning)

    def filter(self, f: Callable[[T], bool]) -> DStream[T]:
        """Keep the records for which ``f`` is true."""
        return self._records("filter", f, True)

    def _records(self, kind: str, f: object, preserves: bool) -> DStream[Any]:
        """A per-record operator; under ``StreamingSettings(bad_records="quarantine")`` the
        records ``f`` raises on are set aside (``ssc.quarantined()``)."""
        return self._wrap(RecordsDStream(self._node, kind, self._user(kind, f), preserves))

    def mapPartitions(
        self, f: Callable[[Iterable[T]], Iterable[Any]], preservesPartitioning: bool = False
    ) -> DStream[Any]:
        """Apply ``f`` to each partition's iterator."""
        uf = self._user("mapPartitions", f)
        g = uf.guarded_partitions()
        return self._rdd_op(
            "mapPartitions", lambda rdd: rdd.mapPartitions(g, preservesPartitioning), [uf]
        )

    def mapPartitionsWithIndex(
        self, f: Callable[[int, Iterable[T]], Iterable[Any]], preservesPartitioning: bool = False
    ) -> DStream[Any]:
        """Apply ``f(partition_index, iterator)`` to each partition."""
        uf = self._user("mapPartitionsWithIndex", f)
        label = uf.label

        def part(index: int, iterator: Iterable[Any]) -> Iterator[Any]:
            g = guard_partitions(lambda it: uf.fn(index, it), label)
            return g(iterator)

        return self._rdd_op(
            "mapPartitionsWithIndex",
            lambda rdd: rdd.mapPartitionsWithIndex(part, preservesPartitioning),
            [uf],
        )

    def glom(self) -> DStream[list[T]]:
        """Turn each partition into a single list."""
        return self._rdd_op("glom", lambda rdd: rdd.glom())

    def repartition(self, numPartitions: int) -> DStream[T]:
        """Reshuffle each interval's records into ``numPartitions`` partitions."""
        n = self._num_partitions(numPartitions, "repartition")
        return self._rdd_op("repartition", lambda rdd: rdd.repartition(n))

    # ---- aggregates over one interval -----------------------------------------------------
    def reduce(self, func: Callable[[T, T], T]) -> DStream[T]:
        """Reduce each interval to one record with the associative ``func``."""
        uf = self._user("reduce", func)
        g = uf.guarded()
        return self._rdd_op(
            "reduce",
            lambda rdd: rdd.map(lambda x: (None, x)).reduceByKey(g, 1).values(),
            [uf],
        )

    def count(self) -> DStream[int]:
        """The number of records of each interval (one record, 0 for an empty interval)."""
        return self._rdd_op("count", _count)

    def countByValue(self) -> DStream[tuple[Any, int]]:
        """``(value, count)`` for every distinct value of each interval."""
        n = self._num_partitions(None, "countByValue")
        return self._rdd_op(
            "countByValue",
            lambda rdd: rdd.map(lambda x: (x, 1)).reduceByKey(operator.add, n),
        )

    # ---- arbitrary RDD functions (run on the driver) --------------------------------------
    def transform(self, func: Callable[..., RDD[Any]]) -> DStream[Any]:
        """Apply an RDD-to-RDD function each interval: ``func(rdd)`` or ``func(time, rdd)``.

        The function runs on the driver, so it may use the SparkContext (``rdd.context``).
        ``time`` is a :class:`dstream.Time`.
        """
        uf = self._user("transform", func, driver=True)
        arity = positional_arity(uf.fn)
        if arity not in (None, 1, 2):
            raise TypeError(
                f"transform() takes func(rdd) or func(time, rdd); the function at {uf.site} "
                f"takes {arity} arguments"
            )
        call: Callable[[Time, list[RDD[Any]]], RDD[Any]]
        if arity == 1:
            call = lambda _t, rdds: uf.fn(rdds[0])  # noqa: E731
        else:
            call = lambda t, rdds: uf.fn(t, rdds[0])  # noqa: E731
        return self._wrap(
            TransformedDStream(
                [self._node], call, name="transform", user_functions=[uf], driver_function=True
            )
        )

    def transformWith(
        self, func: Callable[..., RDD[Any]], other: DStream[Any], keepSerializer: bool = False
    ) -> DStream[Any]:
        """Combine this stream's and ``other``'s RDDs of each interval:
        ``func(rdd_a, rdd_b)`` or ``func(time, rdd_a, rdd_b)`` (runs on the driver)."""
        del keepSerializer  # PySpark's serializer detail; RDDs here keep their own.
        uf = self._user("transformWith", func, driver=True)
        arity = positional_arity(uf.fn)
        if arity not in (None, 2, 3):
            raise TypeError(
                "transformWith() takes func(rdd_a, rdd_b) or func(time, rdd_a, rdd_b); the "
                f"function at {uf.site} takes {arity} arguments"
            )
        other_node = self._node_of(other, "transformWith")
        call: Callable[[Time, list[RDD[Any]]], RDD[Any]]
        if arity == 2:
            call = lambda _t, rdds: uf.fn(rdds[0], rdds[1])  # noqa: E731
        else:
            call = lambda t, rdds: uf.fn(t, rdds[0], rdds[1])  # noqa: E731
        return self._wrap(
            TransformedDStream(
                [self._node, other_node],
                call,
                name="transformWith",
                user_functions=[uf],
                driver_function=True,
            )
        )

    def union(self, other: DStream[Any]) -> DStream[Any]:
        """The records of both streams, interval by interval (same slide required)."""
        return self._wrap(UnionDStream([self._node, self._node_of(other, "union")]))
