"""A received block into Spark's replicated storage, and an interval's blocks back out.

A block becomes a one-partition RDD persisted with ``MEMORY_AND_DISK_2`` (two copies when
``replicas`` is 2) and materialised by a JVM-only ``count()``. Spark's ``BlockManager``
puts the partition on the executor that ran the task and replicates it to a peer executor
before the put returns (``doPutIterator`` waits for the replication future), but a failed
replication only logs a warning ("replicated to only 0 peer(s)") and the put still
succeeds. So the receiver asks the block manager master where the block is now and accepts
the block only when it is on ``replicas`` different executors; otherwise it drops it and
tries again.

An interval's RDD is a ``BlockRDD`` over its blocks' ids: it reads the stored copies (the
nearest one first) and has no lineage to fall back to, exactly as the paper's receiver
input: lose every copy of a block and the interval fails, loudly, instead of silently
reading something else. The driver keeps each block's source RDD referenced until the
block is dropped, because Spark's ``ContextCleaner`` unpersists (deletes) the blocks of an
RDD the driver no longer references; that reference also holds the block's records in the
driver JVM (the ``parallelize`` data), which is the memory cost of this design.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark import StorageLevel
from pyspark.rdd import RDD

if TYPE_CHECKING:
    from pyspark import SparkContext

__all__ = ["NotReplicatedError", "StoredBlock", "interval_rdd", "store_block"]

log = logging.getLogger(__name__)


class NotReplicatedError(RuntimeError):
    """A block was put on fewer executors than asked."""


@dataclass
class StoredBlock:
    """One received block in Spark's storage."""

    client: str  # the client's id (hex)
    seq: int
    count: int
    source: RDD[Any] = field(repr=False)  # kept referenced: Spark's cleaner would drop it
    executors: list[str]

    @property
    def key(self) -> tuple[str, int]:
        return (self.client, self.seq)

    def drop(self) -> None:
        try:
            self.source.unpersist(blocking=False)
        except Exception:  # a stopped SparkContext has nothing left to drop
            log.debug("block %s/%d: unpersist failed", self.client, self.seq, exc_info=True)


def _block_rdd(sc: SparkContext, rdd_ids: list[int]) -> Any:
    """A JVM ``BlockRDD`` reading partition 0 of each of ``rdd_ids``' stored copies."""
    jvm = sc._jvm
    assert jvm is not None and sc._gateway is not None
    ids = sc._gateway.new_array(jvm.org.apache.spark.storage.BlockId, len(rdd_ids))
    for i, rdd_id in enumerate(rdd_ids):
        ids[i] = jvm.org.apache.spark.storage.RDDBlockId(rdd_id, 0)
    return jvm.org.apache.spark.rdd.BlockRDD(sc._jsc.sc(), ids, jvm.scala.reflect.ClassTag.AnyRef())


def _executors(sc: SparkContext, rdd_id: int) -> list[str]:
    """The executors holding the stored copies of ``rdd_id``'s partition 0, as the block
    manager master knows them now."""
    block_rdd = _block_rdd(sc, [rdd_id])
    found = block_rdd.preferredLocations(block_rdd.partitions()[0])
    # Locations read "executor_<host>_<executor id>".
    return sorted({str(found.apply(i)).rsplit("_", 1)[-1] for i in range(found.size())})


def store_block(
    sc: SparkContext, client: str, seq: int, records: list[Any], replicas: int
) -> StoredBlock:
    """Put ``records`` in Spark's storage with ``replicas`` copies on distinct executors;
    NotReplicatedError if fewer copies exist after the put (the copies made are dropped)."""
    level = StorageLevel(True, True, False, False, replicas)
    source = sc.parallelize(records, 1).persist(level)
    source.setName(f"receiver block {client}/{seq}")
    source._jrdd.count()  # materialise in the JVM: no Python worker needed
    executors = _executors(sc, source.id())
    if len(executors) < replicas:
        source.unpersist(blocking=False)
        raise NotReplicatedError(
            f"block {seq} of client {client} is on {len(executors)} executor(s) "
            f"({', '.join(executors) or 'none'}), not {replicas}"
        )
    return StoredBlock(client, seq, len(records), source, executors)


def interval_rdd(sc: SparkContext, blocks: list[StoredBlock]) -> RDD[Any]:
    """The RDD of an interval: one partition per block, read from the stored copies."""
    if not blocks:
        return sc.emptyRDD()
    block_rdd = _block_rdd(sc, [b.source.id() for b in blocks])
    return RDD(block_rdd.toJavaRDD(), sc, blocks[0].source._jrdd_deserializer)
