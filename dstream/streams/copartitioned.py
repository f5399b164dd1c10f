"""Unions of RDDs that share one hash partitioner: narrow, partition by partition.

Spark turns the union of RDDs with equal partitioners into a ``PartitionerAwareUnionRDD``:
partition i of the union is partition i of every parent, read in order — no shuffle. Window
states, ``updateStateByKey`` and ``track`` are all built this way from their previous state
and the new data, which keeps every key in the same partition interval after interval.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from dstream.tasks.state_merge import SectionMark

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext

__all__ = [
    "co_partitioned_union",
    "hash_partitioned",
    "memory_only",
    "sectioned_union",
    "shuffled",
]


def memory_only() -> Any:
    from pyspark import StorageLevel

    return StorageLevel.MEMORY_ONLY


def _identity(records: Iterable[Any]) -> Iterator[Any]:
    return iter(records)


def hash_partitioned(rdd: RDD[Any], num_partitions: int) -> RDD[Any]:
    """``rdd.partitionBy(n)``, re-emitted by one Python pass so its records use the same
    serializer as other Python RDDs (a union of RDDs with different serializers would make
    PySpark re-serialize each of them, one extra pass apiece)."""
    return rdd.partitionBy(num_partitions).mapPartitions(_identity, preservesPartitioning=True)


def shuffled(rdd: RDD[Any], num_partitions: int) -> RDD[Any]:
    """``rdd.partitionBy(n)`` without a pass of its own: the shuffle's output, read as it
    comes off the shuffle by whatever Python pass consumes it.

    PySpark reads a shuffle's output with ``BatchedSerializer(CPickleSerializer)`` and other
    Python RDDs with ``AutoBatchedSerializer(CPickleSerializer)``: both write one pickled list
    per frame and load the same way, but they compare unequal, so a union of the two would
    re-serialize every parent in a pass of its own. This RDD declares the context's
    serializer for the shuffle's output, which loads it unchanged."""
    import pyspark
    from pyspark.serializers import BatchedSerializer, CPickleSerializer

    out = rdd.partitionBy(num_partitions)
    deserializer = out._jrdd_deserializer
    if out is rdd or type(deserializer) is not BatchedSerializer:
        return out  # already partitioned so: no shuffle, nothing to relabel
    assert isinstance(deserializer.serializer, CPickleSerializer)
    relabelled: RDD[Any] = pyspark.RDD(out._jrdd, out.ctx, out.ctx.serializer)
    relabelled.partitioner = out.partitioner
    return relabelled


def co_partitioned_union(rdds: list[RDD[Any]]) -> RDD[Any]:
    """Union that stays narrow when every RDD has the same partitioner, and says so to
    PySpark so that a following ``reduceByKey`` does not shuffle."""
    if len(rdds) == 1:
        return rdds[0]
    union = rdds[0].context.union(rdds)
    first = rdds[0].partitioner
    if first is not None and all(r.partitioner == first for r in rdds):
        union.partitioner = first
    return union


class SectionMarks:
    """One cached RDD per partition count holding exactly one :class:`SectionMark` in each
    partition (key i lands in partition i: ``portable_hash(i) == i`` for small ints)."""

    def __init__(self, sc: SparkContext) -> None:
        self._sc = sc
        self._by_count: dict[int, RDD[Any]] = {}

    def get(self, num_partitions: int) -> RDD[Any]:
        marks = self._by_count.get(num_partitions)
        if marks is None:
            records = [(i, SectionMark()) for i in range(num_partitions)]
            marks = hash_partitioned(self._sc.parallelize(records, num_partitions), num_partitions)
            marks.persist(memory_only())
            self._by_count[num_partitions] = marks
        return marks


def sectioned_union(
    marks: SectionMarks, num_partitions: int, groups: list[list[RDD[Any]]]
) -> RDD[Any]:
    """The narrow union of ``groups`` of co-partitioned RDDs, each group followed by a
    section mark, so one pass over a partition can tell which group a record came from
    (:func:`dstream.tasks.state_merge.sections`)."""
    mark = marks.get(num_partitions)
    ordered: list[RDD[Any]] = []
    for i, group in enumerate(groups):
        ordered.extend(group)
        if i < len(groups) - 1:
            ordered.append(mark)
    if not ordered:
        ordered = [mark.filter(lambda _: False)]
    return co_partitioned_union(ordered)
