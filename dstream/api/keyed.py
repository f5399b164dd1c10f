"""Operators on streams of ``(key, value)`` pairs, within one interval: per-key reduction,
grouping, partitioning and the joins of two streams interval by interval."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from pyspark.rdd import portable_hash

from dstream.api.stateless import StatelessOps
from dstream.streams.transformed import TransformedDStream

if TYPE_CHECKING:
    from pyspark import RDD

    from dstream.dstream import DStream

T = TypeVar("T")

__all__ = ["KeyedOps"]


class KeyedOps(StatelessOps[T]):
    __slots__ = ()

    def mapValues(self, f: Callable[[Any], Any]) -> DStream[tuple[Any, Any]]:
        """Apply ``f`` to the value of every pair, keeping keys (and partitioning)."""
        return self._records("mapValues", f, True)

    def flatMapValues(self, f: Callable[[Any], Iterable[Any]]) -> DStream[tuple[Any, Any]]:
        """Apply ``f`` to every value and emit one pair per element it returns."""
        return self._records("flatMapValues", f, True)

    def combineByKey(
        self,
        createCombiner: Callable[[Any], Any],
        mergeValue: Callable[[Any, Any], Any],
        mergeCombiners: Callable[[Any, Any], Any],
        numPartitions: int | None = None,
    ) -> DStream[tuple[Any, Any]]:
        """Combine the values of each key of each interval (see ``RDD.combineByKey``)."""
        ufs = [
            self._user("combineByKey", createCombiner, "createCombiner"),
            self._user("combineByKey", mergeValue, "mergeValue"),
            self._user("combineByKey", mergeCombiners, "mergeCombiners"),
        ]
        create, merge_value, merge_combiners = (u.guarded() for u in ufs)
        n = self._num_partitions(numPartitions, "combineByKey")
        return self._rdd_op(
            "combineByKey",
            lambda rdd: rdd.combineByKey(create, merge_value, merge_combiners, n),
            ufs,
        )

    def reduceByKey(
        self, func: Callable[[Any, Any], Any], numPartitions: int | None = None
    ) -> DStream[tuple[Any, Any]]:
        """Reduce the values of each key of each interval with the associative ``func``.

        Values are combined on the map side before the shuffle.
        """
        uf = self._user("reduceByKey", func)
        g = uf.guarded()
        n = self._num_partitions(numPartitions, "reduceByKey")
        reduced = self._rdd_op("reduceByKey", lambda rdd: rdd.reduceByKey(g, n), [uf])
        node = reduced._node
        assert isinstance(node, TransformedDStream)  # what _rdd_op makes
        node.mark_keyed_reduce(g, n)
        return reduced

    def groupByKey(self, numPartitions: int | None = None) -> DStream[tuple[Any, Iterable[Any]]]:
        """Group the values of each key of each interval."""
        n = self._num_partitions(numPartitions, "groupByKey")
        return self._rdd_op("groupByKey", lambda rdd: rdd.groupByKey(n))

    def partitionBy(
        self, numPartitions: int, partitionFunc: Callable[[Any], int] = portable_hash
    ) -> DStream[tuple[Any, Any]]:
        """Hash-partition each interval's pairs into ``numPartitions`` partitions."""
        uf = self._user("partitionBy", partitionFunc, "partitionFunc")
        n = self._num_partitions(numPartitions, "partitionBy")
        fn = uf.fn if partitionFunc is portable_hash else uf.guarded()
        return self._rdd_op("partitionBy", lambda rdd: rdd.partitionBy(n, fn), [uf])

    # ---- two streams, interval by interval -----------------------------------------------
    def _pair_op(
        self,
        name: str,
        other: DStream[Any],
        numPartitions: int | None,
        fn: Callable[[RDD[Any], RDD[Any], int], RDD[Any]],
    ) -> DStream[Any]:
        other_node = self._node_of(other, name)
        n = self._num_partitions(numPartitions, name)
        return self._wrap(
            TransformedDStream(
                [self._node, other_node], lambda _t, rdds: fn(rdds[0], rdds[1], n), name=name
            )
        )

    def cogroup(
        self, other: DStream[Any], numPartitions: int | None = None
    ) -> DStream[tuple[Any, tuple[Iterable[Any], Iterable[Any]]]]:
        """For each key of either stream: ``(key, (values here, values in other))``."""
        return self._pair_op("cogroup", other, numPartitions, lambda a, b, n: a.cogroup(b, n))

    def join(self, other: DStream[Any], numPartitions: int | None = None) -> DStream[Any]:
        """Inner join of the two streams' pairs, interval by interval."""
        return self._pair_op("join", other, numPartitions, lambda a, b, n: a.join(b, n))

    def leftOuterJoin(self, other: DStream[Any], numPartitions: int | None = None) -> DStream[Any]:
        """Left outer join: every key of this stream, ``None`` where ``other`` lacks it."""
        return self._pair_op(
            "leftOuterJoin", other, numPartitions, lambda a, b, n: a.leftOuterJoin(b, n)
        )

    def rightOuterJoin(self, other: DStream[Any], numPartitions: int | None = None) -> DStream[Any]:
        """Right outer join: every key of ``other``, ``None`` where this stream lacks it."""
        return self._pair_op(
            "rightOuterJoin", other, numPartitions, lambda a, b, n: a.rightOuterJoin(b, n)
        )

    def fullOuterJoin(self, other: DStream[Any], numPartitions: int | None = None) -> DStream[Any]:
        """Full outer join: every key of either stream."""
        return self._pair_op(
            "fullOuterJoin", other, numPartitions, lambda a, b, n: a.fullOuterJoin(b, n)
        )
