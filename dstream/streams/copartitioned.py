"""Unions of RDDs that share one hash partitioner: narrow, partition by partition.

Spark turns the union of RDDs with equal partitioners into a ``PartitionerAwareUnionRDD``:
partition i of the union is partition i of every parent, read in order — no shuffle. Window
states, ``updateStateByKey`` and ``track`` are all built this way from their previous state
and the new data, which keeps every key in the same partition interval after interval.
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from collections.abc import Generator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from dstream.tasks.state_merge import SectionMark

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext

__all__ = [
    "SectionMarks",
    "co_partitioned_union",
    "key_hash",
    "memory_only",
    "partition_by",
    "sectioned_union",
]


def memory_only(replicas: int = 1, disk: bool = False) -> Any:
    """In memory (serialized, as every PySpark RDD), on ``replicas`` executors; with
    ``disk``, blocks evicted for memory go to the executor's disk instead of away."""
    from pyspark import StorageLevel

    return StorageLevel(disk, True, False, False, replicas)


def key_hash(key: Any) -> int:
    """``pyspark.rdd.portable_hash(key)``, the same value, without its check of
    ``os.environ`` for PYTHONHASHSEED on every call (``partition_by`` checks once a task):
    for string keys that check was two thirds of the hashing (~1.6 of 2.5 us a key)."""
    if key is None:
        return 0
    if isinstance(key, tuple):
        h = 0x345678
        for item in key:
            h ^= key_hash(item)
            h *= 1000003
            h &= sys.maxsize
        h ^= len(key)
        return -2 if h == -1 else h
    return hash(key)


def partition_by(rdd: RDD[Any], num_partitions: int) -> RDD[Any]:
    """``rdd.partitionBy(num_partitions)``: the same partitions, the same partitioner (in
    Python, ``portable_hash``; in the JVM, its ``PythonPartitioner``), so it is co-partitioned
    with what PySpark partitions. Faster on the map side: PYTHONHASHSEED is checked once a
    task (:func:`key_hash`), and the buckets are flushed every 1,000 records or more
    (PySpark starts at ``10 x num_partitions``, growing by half at each flush).

    The output is labelled with the context's serializer (PySpark labels a shuffle's output
    ``BatchedSerializer(CPickleSerializer)``, the context's is
    ``AutoBatchedSerializer(CPickleSerializer)``: both write one pickled list per frame and
    load the same way, but they compare unequal, and a union of RDDs whose serializers differ
    makes PySpark re-serialize each of them in a pass of its own)."""
    import pyspark
    from pyspark.rdd import Partitioner, portable_hash
    from pyspark.serializers import pack_long
    from pyspark.shuffle import get_used_memory
    from pyspark.traceback_utils import SCCallSiteSync

    partitioner = Partitioner(num_partitions, portable_hash)
    if rdd.partitioner == partitioner:
        return rdd
    dumps = rdd.ctx._unbatched_serializer.dumps
    limit = rdd._memory_limit() / 2
    n = num_partitions

    def frames(buckets: dict[int, list[Any]]) -> Generator[bytes, None, int]:
        """Each bucket as (its partition, its pickled records); returns the bytes pickled."""
        size = 0
        for split, items in buckets.items():
            yield pack_long(split)
            data = dumps(items)
            size += len(data)
            yield data
        return size

    def add_shuffle_key(_split: int, records: Iterable[tuple[Any, Any]]) -> Iterator[bytes]:
        if "PYTHONHASHSEED" not in os.environ:
            portable_hash(None)  # raises PySpark's own error, which says what to set
        buckets: dict[int, list[Any]] = defaultdict(list)
        count, batch = 0, 1000
        for key, value in records:  # (key, value) tuples, as PySpark's, whatever came in
            h = hash(key) if type(key) is str else key_hash(key)
            buckets[h % n].append((key, value))
            count += 1
            if count >= batch or (count % 1000 == 0 and get_used_memory() > limit):
                average = (yield from frames(buckets)) // len(buckets)
                buckets.clear()
                if average < 1 << 20:  # frames of 1-10 MB, as PySpark aims for
                    batch += batch // 2
                elif average > 10 << 20:
                    batch = max(batch * 2 // 3, 1)
                count = 0
        yield from frames(buckets)

    keyed = rdd.mapPartitionsWithIndex(add_shuffle_key, preservesPartitioning=True)
    keyed._bypass_serializer = True  # type: ignore[attr-defined]
    jvm = rdd.ctx._jvm
    assert jvm is not None
    caller = sys._getframe(1)
    site = SCCallSiteSync(rdd.context)  # stages named as PySpark's: "partitionBy at <caller>"
    site._call_site = f"partitionBy at {caller.f_code.co_filename}:{caller.f_lineno}"
    with site:
        pairs = jvm.PairwiseRDD(keyed._jrdd.rdd()).asJavaPairRDD()
        jpartitioner = jvm.PythonPartitioner(num_partitions, id(portable_hash))
    jrdd = jvm.PythonRDD.valueOfPair(pairs.partitionBy(jpartitioner))
    out: RDD[Any] = pyspark.RDD(jrdd, rdd.ctx, rdd.ctx.serializer)
    out.partitioner = partitioner
    return out


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
            marks = partition_by(self._sc.parallelize(records, num_partitions), num_partitions)
            marks.persist(memory_only())
            self._by_count[num_partitions] = marks
        return marks

    def release(self) -> None:
        for marks in self._by_count.values():
            marks.unpersist(blocking=False)
        self._by_count.clear()


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
