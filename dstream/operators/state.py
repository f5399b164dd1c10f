"""Keyed state carried from interval to interval: ``updateStateByKey`` and ``track``.

Both keep one hash partitioner for every interval (a key stays in the same partition), so
the state of interval t is built from the state of t - slide and the new records by a
narrow, partition-by-partition union: only the new records are shuffled.
"""

from __future__ import annotations

import logging
import operator
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from dstream.dstream import DStream
from dstream.functions import UserFunction
from dstream.operators.partitioned import hash_partitioned, memory_only, sectioned_union
from dstream.operators.state_logic import merge_update_state, sections
from dstream.operators.track_logic import (
    TrackDelta,
    TrackFunctions,
    changes,
    compact,
    count,
    fold,
    snapshot_path,
    view,
)
from dstream.storage.filesystem import filesystem_for
from dstream.time import Duration, Time

if TYPE_CHECKING:
    from pyspark import RDD

__all__ = ["StateDStream", "TaggedEvents", "TrackDStream", "TrackView"]

log = logging.getLogger(__name__)


def _tag_positions(split: int, records: Iterable[tuple[Any, Any]]) -> Iterator[tuple[Any, Any]]:
    """``(k, v)`` -> ``(k, ((split, position), v))``: the input order of each key's values,
    so they can be put back in that order after the shuffle."""
    for position, (key, value) in enumerate(records):
        yield key, ((split, position), value)


class TaggedEvents(DStream[Any]):
    """The parent's pairs of each interval, tagged with their input position and hash
    partitioned into the state's partitions (the one shuffle of a state update)."""

    def __init__(self, parent: DStream[Any], num_partitions: int, name: str) -> None:
        super().__init__(parent._ssc, [parent], name=name)
        self.num_partitions = num_partitions
        self.storage_level = memory_only()

    def compute(self, time: Time) -> RDD[Any] | None:
        rdd = self._parents[0].get_or_compute(time)
        if rdd is None:
            return None
        return hash_partitioned(rdd.mapPartitionsWithIndex(_tag_positions), self.num_partitions)


class StateDStream(DStream[Any]):
    """``updateStateByKey``: every key with a state or new values gets
    ``update(new values, old state)`` each interval."""

    def __init__(
        self,
        events: TaggedEvents,
        update_func: Callable[[list[Any], Any], Any],
        initial: RDD[Any] | None,
        user_functions: Iterable[UserFunction],
    ) -> None:
        super().__init__(
            events._ssc, [events], name="updateStateByKey", user_functions=user_functions
        )
        self.num_partitions = events.num_partitions
        self._update = update_func
        self._initial = initial
        self.storage_level = memory_only()
        self.is_state = True

    def compute(self, time: Time) -> RDD[Any] | None:
        assert self.zero_time is not None
        previous_time = time - self.slide_duration
        previous = (
            self.get_or_compute(previous_time) if previous_time > self.zero_time else self._initial
        )
        events = self._parents[0].get_or_compute(time)
        groups: list[list[RDD[Any]]] = [
            [] if previous is None else [previous],
            [] if events is None else [events],
        ]
        update = self._update
        union = sectioned_union(self._ssc.section_marks, self.num_partitions, groups)
        return union.mapPartitions(lambda it: merge_update_state(it, update), True)


class TrackDStream(DStream[Any]):
    """``track``'s state: one :class:`TrackDelta` record per partition per interval, over a
    snapshot file that an asynchronous compaction renews every checkpoint interval (see
    :mod:`dstream.operators.track_logic` for why)."""

    needs_storage = True

    def __init__(
        self,
        events: TaggedEvents,
        functions: TrackFunctions,
        user_functions: Iterable[UserFunction],
    ) -> None:
        super().__init__(events._ssc, [events], name="track", user_functions=user_functions)
        self._fns = functions
        self.num_partitions = events.num_partitions
        self.storage_level = memory_only()
        self.is_state = True
        self.directory: str | None = None
        # The published snapshot (batch ms it reflects), and which snapshot each remembered
        # interval was built on.
        self._snapshot_ms: int | None = None
        self._built_on: dict[Time, int | None] = {}
        self._compacting = threading.Lock()

    @property
    def compaction_interval(self) -> Duration:
        return self.checkpoint_interval or self.default_checkpoint_interval()

    def parent_remember_duration(self) -> Duration | None:
        # A rebuild after a compaction replays the events since that snapshot, which lags
        # behind by up to one compaction interval plus the compaction's own run time.
        return (self.remember_duration or self.slide_duration) + self.compaction_interval * 3

    def prepare_storage(self, root: str) -> None:
        self.directory = f"{root.rstrip('/')}/track-{self.id}"

    def compute(self, time: Time) -> RDD[Any] | None:
        assert self.zero_time is not None and self.directory is not None
        slide, events_stream = self.slide_duration, self._parents[0]
        previous_time = time - slide
        previous = self.get_or_compute(previous_time) if previous_time > self.zero_time else None
        with self._lock:
            base_ms = self._snapshot_ms
        if previous is not None and self._built_on.get(previous_time) == base_ms:
            replay = [time]  # the usual step: previous delta + this interval
        else:
            # First interval, or a new snapshot was published: rebuild from the snapshot and
            # the intervals after it — lineage stops at the snapshot.
            since = Time(base_ms) if base_ms is not None else self.zero_time
            replay = [Time(ms) for ms in range(since.ms + slide.ms, time.ms + 1, slide.ms)]
            if previous is not None and not all(u in events_stream.generated for u in replay[:-1]):
                # Those intervals are no longer remembered: keep building on the old snapshot.
                base_ms, replay = self._built_on.get(previous_time), [time]
            else:
                previous = None
        groups: list[list[RDD[Any]]] = [[] if previous is None else [previous]]
        for u in replay:
            rdd = events_stream.get_or_compute(u)
            groups.append([] if rdd is None else [rdd])
        self._built_on[time] = base_ms
        fns, directory, times = self._fns, self.directory, [u.ms for u in replay]

        def step(split: int, records: Iterable[Any]) -> Iterator[tuple[int, TrackDelta]]:
            parts = sections(records, len(times) + 1)
            previous_delta = parts[0][0][1] if parts[0] else None
            intervals = [
                (ms, [(key, tagged) for key, tagged in events])
                for ms, events in zip(times, parts[1:], strict=True)
            ]
            path = None if base_ms is None else snapshot_path(directory, base_ms, split)
            yield split, fold(split, previous_delta, base_ms, path, intervals, fns)

        union = sectioned_union(self._ssc.section_marks, self.num_partitions, groups)
        return union.mapPartitionsWithIndex(step, preservesPartitioning=True)

    def clear_metadata(self, time: Time) -> None:
        super().clear_metadata(time)
        with self._lock:
            for t in [t for t in self._built_on if t not in self.generated]:
                del self._built_on[t]
        self._delete_unused_snapshots()

    def _delete_unused_snapshots(self) -> None:
        # A snapshot is deleted once a newer one is published and no remembered interval
        # was built on it (its RDDs could still be recomputed from it).
        if self.directory is None:
            return
        live = self.live_snapshots()
        fs = filesystem_for(self.directory, self._ssc.sparkContext)
        for name in fs.list_names(self.directory):
            if name.startswith("snapshot-") and name[9:].isdigit():
                ms = int(name[9:])
                if live and ms < max(live) and ms not in live:
                    fs.delete(f"{self.directory}/{name}")

    # ---- compaction: the state's asynchronous checkpoint ---------------------------------------
    def on_batch_completed(self, time: Time) -> None:
        assert self.zero_time is not None
        if (time - self.zero_time).ms % self.compaction_interval.ms != 0:
            return
        rdd = self.generated.get(time)
        if rdd is None or not self._compacting.acquire(blocking=False):
            return  # the previous compaction is still running: skip this one
        threading.Thread(
            target=self._compact, args=(time, rdd), name=f"dstream-compact-{self.id}", daemon=True
        ).start()

    def _compact(self, time: Time, rdd: RDD[Any]) -> None:
        try:
            directory = self.directory
            assert directory is not None
            sc = self._ssc.sparkContext
            sc.setJobGroup(
                f"{self._ssc.job_group_prefix}-compact-{self.id}-{time.ms}",
                f"dstream track() snapshot at {time.ms} ms",
            )
            rdd.map(lambda pd: compact(pd[1], directory)).collect()
            with self._lock:
                if self._snapshot_ms is None or time.ms > self._snapshot_ms:
                    self._snapshot_ms = time.ms
        except Exception:
            log.exception("track() snapshot at %s failed; keeping the previous one", time)
        finally:
            self._compacting.release()

    def live_snapshots(self) -> set[int]:
        """Snapshot times still needed: the published one and those remembered RDDs use."""
        with self._lock:
            used = {ms for ms in self._built_on.values() if ms is not None}
            if self._snapshot_ms is not None:
                used.add(self._snapshot_ms)
        return used


class TrackView(DStream[Any]):
    """The stream ``track()`` returns: ``(key, state)`` for every live key."""

    def __init__(self, state: TrackDStream) -> None:
        super().__init__(state._ssc, [state], name="track")
        self.state = state

    def compute(self, time: Time) -> RDD[Any] | None:
        deltas = self._parents[0].get_or_compute(time)
        if deltas is None:
            return None
        return deltas.mapPartitions(lambda it: (kv for _, d in it for kv in view(d)), True)

    def count(self) -> DStream[int]:
        """Live keys each interval, from the snapshots' recorded sizes and the deltas: costs
        what the changed keys cost, not what all keys cost."""
        from dstream.operators.transformed import TransformedDStream

        return TransformedDStream(
            [self.state],
            lambda _t, rdds: (
                rdds[0].map(lambda pd: (None, count(pd[1]))).reduceByKey(operator.add, 1).values()
            ),
            name="count",
        )

    def changes(self) -> DStream[tuple[Any, Any]]:
        """``(key, new state)`` of the keys that changed in each interval; ``(key, None)``
        for keys removed by ``update`` or by their timeout."""
        from dstream.operators.transformed import TransformedDStream

        return TransformedDStream(
            [self.state],
            lambda _t, rdds: rdds[0].mapPartitions(
                lambda it: (kv for _, d in it for kv in changes(d)), True
            ),
            name="changes",
        )

    def checkpoint(self, interval: object) -> TrackView:
        """How often the state is compacted into a new snapshot (its checkpoint)."""
        self.state.checkpoint(interval)
        return self
