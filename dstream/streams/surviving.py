"""What survives of a cached state after executors are lost, and copies of its partitions:
the Python side of the JVM shim's ``io.dstream.shim.state`` classes.

:func:`surviving` reads a cached RDD's partitions from the block managers without depending
on that RDD, so Spark never walks its lineage: a partition whose block was lost yields one
``(LostBlock(), None)`` record instead of being recomputed (the tasks reading it decide what
replaces it: a copy, a checkpoint, nothing). :func:`holders`, :func:`copies` and
:func:`sizes` ask the block manager master on which executors a cached RDD's blocks are,
on how many, and how large. :func:`replicating` gives chosen partitions of a state a second
in-memory copy, made by the task that computes the partition. :func:`ensure_pool` makes a
fair-scheduler pool with a weight.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from dstream.tasks.approx_state import LostBlock

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext

__all__ = ["copies", "ensure_pool", "holders", "replicating", "sizes", "surviving"]


def _view(jrdd: Any, like: RDD[Any]) -> RDD[Any]:
    import pyspark

    out: RDD[Any] = pyspark.RDD(jrdd, like.ctx, like._jrdd_deserializer)
    out.partitioner = like.partitioner
    return out


def _spec(items: Iterable[int]) -> str:
    return ",".join(str(i) for i in sorted(set(items)))


def surviving(rdd: RDD[Any], lost: Iterable[int] = ()) -> RDD[Any]:
    """``rdd``'s cached partitions as they are now, with no lineage; partitions ``lost`` (and
    any whose block no executor holds) are one ``(LostBlock(), None)`` record each."""
    from dstream.jvm import executor_class, invoke_static

    sc = rdd.ctx
    serializer = getattr(rdd._jrdd_deserializer, "serializer", None)
    if serializer is None:  # pragma: no cover - state RDDs are always batches of pickles
        raise TypeError(f"{rdd} is not an RDD of pickled records ({rdd._jrdd_deserializer})")
    marker = serializer.dumps([(LostBlock(), None)])
    partitioner = rdd._jrdd.rdd().partitioner()
    cls = executor_class(sc, "io.dstream.shim.state.StateBlocks")
    jrdd = invoke_static(
        sc,
        cls,
        "of",
        ("org.apache.spark.SparkContext", sc._jsc.sc()),
        ("int", rdd.id()),
        ("int", rdd.getNumPartitions()),
        ("org.apache.spark.Partitioner", partitioner.get() if partitioner.isDefined() else None),
        ("[B", bytearray(marker)),
        ("java.lang.String", _spec(lost)),
    )
    return _view(jrdd, rdd)


def holders(rdd: RDD[Any]) -> list[list[str]]:
    """The ids of the executors holding each partition of the cached ``rdd`` (none: lost,
    or never computed)."""
    from dstream.jvm import invoke_static, shim_class

    sc = rdd.ctx
    cls = shim_class(sc, "io.dstream.shim.state.Blocks")
    text = invoke_static(sc, cls, "executors", ("int", rdd.id()), ("int", rdd.getNumPartitions()))
    return [block.split() for block in str(text).split(";")] if rdd.getNumPartitions() else []


def copies(rdd: RDD[Any]) -> list[int]:
    """How many executors hold each partition of the cached ``rdd`` (0: lost, or never
    computed)."""
    return [len(executors) for executors in holders(rdd)]


def sizes(rdd: RDD[Any]) -> list[int]:
    """The bytes each partition of the cached ``rdd`` takes (0: not cached anywhere)."""
    from dstream.jvm import invoke_static, shim_class

    sc = rdd.ctx
    cls = shim_class(sc, "io.dstream.shim.state.Blocks")
    text = invoke_static(sc, cls, "sizes", ("int", rdd.id()), ("int", rdd.getNumPartitions()))
    return [int(n) for n in str(text).split(",") if n]


def replicating(rdd: RDD[Any], chosen: Iterable[int]) -> RDD[Any]:
    """``rdd`` (to be persisted with one copy) whose partitions ``chosen`` get a second copy
    on another executor when a task computes them."""
    from dstream.jvm import executor_class, invoke_static

    sc = rdd.ctx
    cls = executor_class(sc, "io.dstream.shim.state.Replicating")
    jrdd = invoke_static(
        sc,
        cls,
        "of",
        ("org.apache.spark.rdd.RDD", rdd._jrdd.rdd()),
        ("java.lang.String", _spec(chosen)),
    )
    return _view(jrdd, rdd)


def ensure_pool(sc: SparkContext, name: str, weight: int, min_share: int = 0) -> bool:
    """Make the fair-scheduler pool ``name`` (unless it exists); False when the application
    does not schedule fairly (``spark.scheduler.mode`` is not FAIR), where pools do nothing."""
    from dstream.jvm import invoke_static, shim_class

    cls = shim_class(sc, "io.dstream.shim.Pools")
    return bool(
        invoke_static(
            sc,
            cls,
            "ensure",
            ("org.apache.spark.SparkContext", sc._jsc.sc()),
            ("java.lang.String", name),
            ("int", weight),
            ("int", min_share),
        )
    )
