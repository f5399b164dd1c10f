"""Received blocks into Spark's replicated storage, and an interval's blocks back out.
(Blocks that a receiver on an executor stored, ``StreamBlockId`` blocks, are named and read
here too: :func:`stream_block`; they are stored by the JVM shim's receiver.)

The blocks a connection has received while the previous ones were being stored are stored
together: one partition per block of one RDD (a ``union`` of one-partition
``parallelize`` calls) persisted with ``MEMORY_AND_DISK_2`` (two copies when ``replicas`` is
2) and materialised by one JVM-only ``count()`` — one job for the batch, not one per block.
Spark's ``BlockManager`` puts each partition on the executor that ran its task and
replicates it to a peer executor before the put returns (``doPutIterator`` waits for the
replication future), but a failed replication only logs a warning ("replicated to only 0
peer(s)") and the put still succeeds. So the receiver asks the block manager master where
each block is now and accepts the batch only when every block is on ``replicas`` different
executors; otherwise it drops the batch and tries again.

An interval's RDD is a ``BlockRDD`` over its blocks' ids: it reads the stored copies (the
nearest one first) and has no lineage to fall back to, exactly as the paper's receiver
input: lose every copy of a block and the interval fails, loudly, instead of silently
reading something else. The driver keeps each batch's RDD referenced until its last block
is dropped, because Spark's ``ContextCleaner`` unpersists (deletes) the blocks of an RDD
the driver no longer references; that reference also holds the blocks' records in the
driver JVM (the ``parallelize`` data), which is the memory cost of this design.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark import StorageLevel
from pyspark.rdd import RDD
from pyspark.serializers import NoOpSerializer, Serializer

from dstream.jvm import gateway_of, java_class
from dstream.receiver.protocol import decode_records

if TYPE_CHECKING:
    from pyspark import SparkContext

__all__ = [
    "NotReplicatedError",
    "StoredBlock",
    "drop_blocks",
    "interval_rdd",
    "remove_stream_blocks",
    "store_blocks",
    "stream_block",
]

log = logging.getLogger(__name__)


class NotReplicatedError(RuntimeError):
    """A block was put on fewer executors than asked."""


class _Batch:
    """The RDD a batch of received blocks was stored as (partition i: block i), kept
    referenced until every block of it is dropped: Spark's cleaner would drop it."""

    def __init__(self, rdd: RDD[Any], blocks: int) -> None:
        self.rdd = rdd
        self._left = blocks
        self._lock = threading.Lock()

    def release(self) -> None:
        with self._lock:
            self._left -= 1
            if self._left != 0:
                return
        try:
            self.rdd.unpersist(blocking=False)
        except Exception:  # a stopped SparkContext has nothing left to drop
            log.debug("%s: unpersist failed", self.rdd.name(), exc_info=True)


@dataclass
class StoredBlock:
    """One received block in Spark's storage, under the Spark block id ``spark_id``:
    ``("rdd", rdd id, partition)`` for a block the driver's receiver stored (partition of
    its batch's RDD), ``("input", stream id, unique id)`` for one an executor's receiver
    stored (``StreamBlockId``). ``read_as`` is the PySpark deserializer of what is stored;
    ``frame_text`` is None for records stored as such, and for a block stored as the
    client's frame (one byte string) whether its records are read as str or as bytes."""

    client: str  # the client's id (hex)
    seq: int
    count: int
    spark_id: tuple[str, int, int]
    executors: list[str]
    release: Callable[[], None] = field(repr=False)
    read_as: Serializer = field(repr=False)
    frame_text: bool | None = None

    @property
    def key(self) -> tuple[str, int]:
        return (self.client, self.seq)

    def drop(self) -> None:
        """This block is no longer needed: its copies are deleted (a driver-stored batch's
        copies go with its last block)."""
        self.release()


def _block_rdd(sc: SparkContext, block_ids: list[tuple[str, int, int]]) -> Any:
    """A JVM ``BlockRDD`` whose partition i reads the stored copies of ``block_ids[i]``."""
    gateway = gateway_of(sc)
    assert gateway is not None

    def storage(name: str) -> Any:
        return java_class(sc, f"org.apache.spark.storage.{name}")

    ids = gateway.new_array(storage("BlockId"), len(block_ids))
    rdd_block, stream_block = storage("RDDBlockId"), storage("StreamBlockId")
    for i, (kind, a, b) in enumerate(block_ids):
        ids[i] = rdd_block(a, b) if kind == "rdd" else stream_block(a, b)
    any_ref = java_class(sc, "scala.reflect.ClassTag").AnyRef()
    return java_class(sc, "org.apache.spark.rdd.BlockRDD")(sc._jsc.sc(), ids, any_ref)


def remove_stream_blocks(sc: SparkContext, block_ids: list[tuple[str, int, int]]) -> None:
    """Delete every copy of executor receivers' blocks (``("input", stream id, unique id)``,
    ``StreamBlockId``s), all in one call to the block manager master."""
    try:
        # (Through BlockRDD: Py4J cannot reflect on BlockManager, whose methods name classes
        # that are not on the driver's classpath.)
        _block_rdd(sc, block_ids).removeBlocks()
    except Exception:  # a stopped SparkContext has nothing left to drop
        log.debug("%d stream blocks: remove failed", len(block_ids), exc_info=True)


def drop_blocks(sc: SparkContext, blocks: list[StoredBlock]) -> None:
    """``drop()`` each of ``blocks``, with the executor receivers' blocks removed together
    (one Py4J round for an interval's blocks rather than a few per block)."""
    stream = [b.spark_id for b in blocks if b.spark_id[0] == "input"]
    if stream:
        remove_stream_blocks(sc, stream)
    for block in blocks:
        if block.spark_id[0] != "input":
            block.drop()


def stream_block(
    sc: SparkContext,
    stream_id: int,
    client: str,
    seq: int,
    count: int,
    unique: int,
    executors: list[str],
    as_text: bool,
) -> StoredBlock:
    """The block an executor's receiver stored as ``StreamBlockId(stream_id, unique)``: the
    client's block frame as one byte array, split into its records (str if ``as_text``)
    when an interval reads it."""
    return StoredBlock(
        client,
        seq,
        count,
        ("input", stream_id, unique),
        executors,
        lambda: remove_stream_blocks(sc, [("input", stream_id, unique)]),
        NoOpSerializer(),
        as_text,
    )


def _frame_records(as_text: bool) -> Callable[[bytes], list[Any]]:
    def records(frame: bytes) -> list[Any]:
        _, raw = decode_records(frame)
        return [r.decode("utf-8", "replace") for r in raw] if as_text else raw

    return records


def _executors(sc: SparkContext, block_ids: list[tuple[str, int, int]]) -> list[list[str]]:
    """For each block, the executors holding its stored copies, as the block manager master
    knows them now."""
    block_rdd = _block_rdd(sc, block_ids)
    partitions = block_rdd.partitions()
    held = []
    for i in range(len(block_ids)):
        found = block_rdd.preferredLocations(partitions[i])
        # Locations read "executor_<host>_<executor id>".
        held.append(sorted({str(found.apply(j)).rsplit("_", 1)[-1] for j in range(found.size())}))
    return held


def store_blocks(
    sc: SparkContext, blocks: list[tuple[str, int, list[Any]]], replicas: int
) -> list[StoredBlock]:
    """Put each ``(client, seq, records)`` in Spark's storage with ``replicas`` copies on
    distinct executors, all in one job (one RDD, a partition per block: a job per block
    costs a scheduling round each); NotReplicatedError if any block has fewer copies after
    the put (then the whole batch's copies are dropped)."""
    if not blocks:
        return []
    level = StorageLevel(True, True, False, False, replicas)
    parts = [sc.parallelize(records, 1) for _, _, records in blocks]
    rdd = (parts[0] if len(parts) == 1 else sc.union(parts)).persist(level)
    first, last = blocks[0], blocks[-1]
    rdd.setName(f"receiver blocks {first[0]}/{first[1]}..{last[0]}/{last[1]} ({len(blocks)})")
    rdd._jrdd.count()  # materialise in the JVM: no Python worker needed
    held = _executors(sc, [("rdd", rdd.id(), i) for i in range(len(blocks))])
    short = [(b, e) for b, e in zip(blocks, held, strict=True) if len(e) < replicas]
    if short:
        rdd.unpersist(blocking=False)
        (client, seq, _), executors = short[0]
        raise NotReplicatedError(
            f"block {seq} of client {client} is on {len(executors)} executor(s) "
            f"({', '.join(executors) or 'none'}), not {replicas}"
            + (f" ({len(short)} blocks of {len(blocks)} short)" if len(short) > 1 else "")
        )
    batch = _Batch(rdd, len(blocks))
    return [
        StoredBlock(
            client,
            seq,
            len(records),
            ("rdd", rdd.id(), i),
            executors,
            batch.release,
            rdd._jrdd_deserializer,
        )
        for i, ((client, seq, records), executors) in enumerate(zip(blocks, held, strict=True))
    ]


def interval_rdd(sc: SparkContext, blocks: list[StoredBlock]) -> RDD[Any]:
    """The RDD of an interval: one partition per block, read from the stored copies."""
    if not blocks:
        return sc.emptyRDD()
    block_rdd = _block_rdd(sc, [b.spark_id for b in blocks])
    rdd: RDD[Any] = RDD(block_rdd.toJavaRDD(), sc, blocks[0].read_as)
    as_text = blocks[0].frame_text
    return rdd if as_text is None else rdd.flatMap(_frame_records(as_text))
