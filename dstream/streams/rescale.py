"""Keyed state that changes its number of partitions while the program runs (SPATE's
elastic slices on D-Streams): which partition count each interval's state has, and how the
state of one count becomes the state of another.

A state's partition count is a schedule: the count it started with, then each rescale from
the interval it takes effect at. The schedule is journaled with the state, so a driver
restarted from a checkpoint taken before a rescale replays the intervals since at the counts
they had, and carries the rescale forward instead of rolling it back (SPATE's point).

Moving the state from ``n`` to ``m`` hash partitions needs no shuffle when every new
partition draws on few old ones: a key in old partition ``p`` (hash ≡ p mod n) can only land
in new partitions ``i`` with ``i ≡ p (mod gcd(n, m))``. With ``m = 2n`` each new partition
reads one old partition and keeps half of it; with ``m = n/2`` it reads two and keeps all.
:func:`narrow_plan` gives that table when each new partition reads at most two old ones
(otherwise a shuffle moves less, and is used).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from math import gcd
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext

__all__ = [
    "PartitionSchedule",
    "keeps_whole_parents",
    "narrow_plan",
    "partition_of",
    "regroup",
    "regroup_partitions",
    "regroup_unfiltered",
]


class PartitionSchedule:
    """``(from_ms, count)`` steps: the count of the interval at ``ms`` is that of the last
    step at or before it (the first step covers every earlier interval). Shared by a state
    and the stream that shuffles its input, so both change count at the same interval."""

    def __init__(self, count: int) -> None:
        self._steps: list[tuple[int, int]] = [(0, count)]
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"steps": self.steps()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._steps = [(int(a), int(b)) for a, b in state["steps"]]
        self._lock = threading.Lock()

    def steps(self) -> list[tuple[int, int]]:
        with self._lock:
            return list(self._steps)

    def at(self, ms: int) -> int:
        with self._lock:
            count = self._steps[0][1]
            for from_ms, n in self._steps:
                if from_ms > ms:
                    break
                count = n
            return count

    @property
    def latest(self) -> int:
        with self._lock:
            return self._steps[-1][1]

    def start_with(self, count: int) -> None:
        """Before the first interval: the count it starts with."""
        with self._lock:
            self._steps = [(0, count)]

    def add(self, from_ms: int, count: int) -> None:
        """From the interval at ``from_ms`` on, ``count`` partitions (a later rescale
        replaces one not yet in effect at the same interval)."""
        with self._lock:
            if from_ms < self._steps[-1][0]:
                raise ValueError(
                    f"a rescale from {from_ms} ms comes before the last one, from "
                    f"{self._steps[-1][0]} ms; rescales take effect in order"
                )
            if from_ms == self._steps[-1][0] and len(self._steps) > 1:
                self._steps[-1] = (from_ms, count)
            elif count != self._steps[-1][1]:
                self._steps.append((from_ms, count))

    def restart_with(self, from_ms: int, count: int) -> None:
        """A restarted program's own count, from its first interval: steps the old driver
        scheduled for that interval or later never took effect and are dropped."""
        with self._lock:
            kept = [step for step in self._steps if step[0] < from_ms] or self._steps[:1]
            self._steps = kept if kept[-1][1] == count else [*kept, (from_ms, count)]

    def replace(self, steps: list[tuple[int, int]] | list[list[int]]) -> None:
        """The steps a restarted driver read from the journal."""
        with self._lock:
            self._steps = [(int(a), int(b)) for a, b in steps]


def narrow_plan(old: int, new: int) -> list[list[int]] | None:
    """For each new partition, the old partitions its keys can come from, if each reads at
    most two (None: a shuffle moves less)."""
    g = gcd(old, new)
    if old // g > 2:
        return None
    return [[p for p in range(old) if p % g == i % g] for i in range(new)]


def keeps_whole_parents(old: int, new: int) -> bool:
    """Whether each new partition of :func:`narrow_plan` keeps every record of the old
    partitions it reads: when ``new`` divides ``old`` (a merge), a key in old partition ``p``
    has ``hash % new == p % new``, the new partition that reads ``p``, so nothing needs to be
    hashed again to drop a sibling's keys (a split leaves half of each one it reads)."""
    return old % new == 0


def partition_of(key: Any, count: int) -> int:
    """The partition of ``key`` among ``count`` (as ``partition_by`` hashes it)."""
    from dstream.streams.copartitioned import key_hash

    return (hash(key) if type(key) is str else key_hash(key)) % count


def regroup(sc: SparkContext, rdd: RDD[Any], old: int, new: int) -> RDD[Any]:
    """``rdd`` (``(key, value)`` records hash-partitioned into ``old`` partitions) in
    ``new`` partitions, co-partitioned with ``partition_by(..., new)``: narrowly through the
    JVM shim's ``Rescaled`` RDD when :func:`narrow_plan` allows and the shim is there,
    otherwise by one shuffle."""
    from dstream.streams.copartitioned import partition_by

    grouped = regroup_unfiltered(sc, rdd, old, new)
    if grouped is None:
        return partition_by(rdd, new)
    if keeps_whole_parents(old, new):  # a merge: no sibling's keys to drop, no pass
        return grouped

    def keep(split: int, records: Any) -> Any:
        return (kv for kv in records if partition_of(kv[0], new) == split)

    out = grouped.mapPartitionsWithIndex(keep, preservesPartitioning=True)
    out.partitioner = grouped.partitioner
    return out


def regroup_unfiltered(sc: SparkContext, rdd: RDD[Any], old: int, new: int) -> RDD[Any] | None:
    """``rdd``'s records regrouped narrowly into ``new`` partitions *without* dropping the
    keys that belong to a sibling partition (a split's new partition holds its whole old
    partition): for a task that reads them once anyway and can skip the others itself
    (:func:`dstream.tasks.state_merge.merge_update_state`'s ``keep``), saving a pass that
    unpickles, hashes and pickles the state again. None where there is no narrow plan or no
    shim (then :func:`regroup`)."""
    plan = narrow_plan(old, new)
    cls = None if plan is None else _rescaled_class(sc)
    if plan is None or cls is None:
        return None
    return _regrouped(sc, cls, rdd, plan, new, None)


def regroup_partitions(
    sc: SparkContext, rdd: RDD[Any], old: int, new: int, build: Callable[[int, Any], Any]
) -> RDD[Any]:
    """``rdd``'s ``old`` partitions regrouped into ``new`` without a shuffle, for state whose
    records are not one per key (a window's one record per partition): new partition ``i``
    is ``build(i, records of the old partitions it draws on)``. Narrow plans where they
    exist, else every new partition reads every old one. Needs the JVM shim."""
    from dstream.jvm import SHIM_JAR, ShimMissingError

    plan = narrow_plan(old, new) or [list(range(old)) for _ in range(new)]
    cls = _rescaled_class(sc)
    if cls is None:
        raise ShimMissingError(SHIM_JAR)
    return _regrouped(sc, cls, rdd, plan, new, build)


def _regrouped(
    sc: SparkContext,
    cls: Any,
    rdd: RDD[Any],
    plan: list[list[int]],
    new: int,
    build: Callable[[int, Any], Any] | None,
) -> RDD[Any]:
    import pyspark
    from pyspark.rdd import Partitioner, portable_hash

    from dstream.jvm import invoke_static

    jvm = sc._jvm
    assert jvm is not None
    spec = ";".join(",".join(str(p) for p in parents) for parents in plan)
    jrdd = invoke_static(
        sc,
        cls,
        "of",
        ("org.apache.spark.rdd.RDD", rdd._jrdd.rdd()),
        ("org.apache.spark.Partitioner", jvm.PythonPartitioner(new, id(portable_hash))),
        ("java.lang.String", spec),
    )
    partitioner = Partitioner(new, portable_hash)
    grouped: RDD[Any] = pyspark.RDD(jrdd, sc, rdd._jrdd_deserializer)
    grouped.partitioner = partitioner
    if build is None:
        return grouped
    out = grouped.mapPartitionsWithIndex(build, preservesPartitioning=True)
    out.partitioner = partitioner
    return out


def _rescaled_class(sc: SparkContext) -> Any:
    """The shim's ``Rescaled`` class, with the jar shipped to the executors (None, logged
    once, without the shim: rescales then shuffle the state)."""
    import logging

    from dstream.jvm import ShimMissingError, executor_class

    try:
        return executor_class(sc, "io.dstream.shim.state.Rescaled")
    except ShimMissingError as exc:
        logging.getLogger(__name__).warning("rescale shuffles the state: %s", exc)
        return None
