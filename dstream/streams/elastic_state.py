"""A state whose partition count changes at run time (``rescale()``, the elastic policy).

The count of each interval's state is a :class:`~dstream.streams.rescale.PartitionSchedule`;
a rescale adds a step at the next interval not generated yet, and the state's records are
regrouped there (narrowly when the counts allow; see :mod:`dstream.streams.rescale`). The
schedule is journaled, so a restarted driver keeps the counts run-time rescales gave the
state (SPATE's rule: a restart never rolls a rescale back)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, ClassVar

from dstream.streams.recoverable import RecoverableState
from dstream.streams.rescale import PartitionSchedule, regroup
from dstream.time import Time

if TYPE_CHECKING:
    from pyspark import RDD

__all__ = ["ElasticState"]

log = logging.getLogger(__name__)


class ElasticState(RecoverableState):
    """The partition schedule of a state stream (see :class:`StateStream`)."""

    # The partition count of each interval's state (rescale() adds steps).
    _schedule: PartitionSchedule
    # Why the state cannot change its partition count (None: it can, see rescale()).
    fixed_partitions: ClassVar[str | None] = "its partitions are not (key, state) records"
    # The count the program's code asks for (numPartitions=, or rescale() before start):
    # journaled, so that a restarted driver tells a changed program (rescale to its new
    # count) from the same program (keep the counts run-time rescales gave the state).
    # (None in a graph saved before the declared count was: the same program as the journal's.)
    _declared_partitions: int | None = None

    _transient: ClassVar[tuple[str, ...]] = ("_wanted_partitions",)

    def _init_transient(self) -> None:
        super()._init_transient()
        # A restored program that asked for another partition count than the journal's.
        self._wanted_partitions: int | None = None

    @property
    def schedule(self) -> PartitionSchedule:
        """The partition count of each interval's state (``rescale()`` adds steps)."""
        return self._schedule

    @property
    def partitions(self) -> int:
        """The partition count of the newest step (fixed for track())."""
        return self._schedule.latest

    def partitions_at(self, time: Time) -> int:
        return self._schedule.at(time.ms)

    def rescale(self, count: object) -> Time | None:
        """``count`` partitions from the next interval not generated yet (before start: from
        the first). Returns that interval (None before start)."""
        if self.fixed_partitions is None:  # a fixed count says its own rule
            self._refuse("rescale", count=count)
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise ValueError(
                f"rescale({count!r}) of {self.label}: the partition count must be a "
                "positive int, e.g. rescale(8)"
            )
        if self.fixed_partitions is not None:
            raise ValueError(
                f"rescale({count}) of {self.label}: {self.fixed_partitions}; its partition "
                "count is fixed (numPartitions= when it is made)"
            )
        with self._lock:
            if self._zero_time is None:
                self._schedule.start_with(count)
                self._declared_partitions = count
                return None
            newest = max(self._generated, default=self._zero_time)
            if self._completed_ms is not None:
                newest = max(newest, Time(self._completed_ms))
            start = newest + self.slide_duration
            self._schedule.add(start.ms, count)
        log.info("%s: %d partitions from interval %s", self.label, count, start)
        self._warm_up(self._schedule.at((start - self.slide_duration).ms), count)
        return start

    def _warm_up(self, old: int, new: int) -> None:
        """Run, in the caller's thread and before the rescale interval, what the interval
        would otherwise do first: the section marks of the new count (a small job and a
        shuffle) and one regroup of them (which ships the shim jar to the executors and
        loads its classes there)."""
        marks = self._graph.runtime.marks
        marks.get(new).count()
        regroup(self._graph.sc, marks.get(old), old, new).count()

    def _fit(self, rdd: RDD[Any], count: int, have: int | None = None) -> RDD[Any]:
        """``rdd`` (hash-partitioned (key, value) records) in ``count`` partitions: itself,
        or regrouped (narrowly when the counts allow; see dstream.streams.rescale)."""
        if have is None:
            have = rdd.partitioner.numPartitions if rdd.partitioner else rdd.getNumPartitions()
        if have == count:
            return rdd
        return regroup(self._graph.sc, rdd, have, count)

    def _rescale_wanted(self, time: Time) -> None:
        """The first interval a restored program computes: the count its code asks for."""
        if self._wanted_partitions is not None:
            self._schedule.restart_with(time.ms, self._wanted_partitions)
            self._wanted_partitions = None

    def _journal_schedule(self) -> dict[str, Any]:
        return {
            "partitions": self._schedule.steps(),
            "declared_partitions": self._declared_partitions,
        }

    def _restore_schedule(self, state: dict[str, Any], old_count: int | None) -> None:
        """The journaled counts (``old_count``: a journal from before states could rescale
        has the count in the state's shape only)."""
        steps = state.get("partitions") or ([(0, old_count)] if old_count else None)
        if steps and self.fixed_partitions is None:
            # The counts the intervals had, run-time rescales (and the elastic policy's)
            # included: SPATE's rule, a rescale is never rolled back by a restart. Only a
            # program whose code asks for another count than the one that wrote the journal
            # rescales, at its first interval. (A journal from before the declared count was
            # recorded: its first step is the count that program started with.)
            declared_then = int(state.get("declared_partitions") or steps[0][1])
            self._schedule.replace(steps)
            now = self._declared_partitions or declared_then
            if now not in (declared_then, self._schedule.latest):
                self._wanted_partitions = now
