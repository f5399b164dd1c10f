"""The Kafka input stream (driver side): each interval's offset ranges, decided when the
interval is generated and kept in the metadata journal.

::

    generate t   ask Kafka for partitions and offsets ──▶ plan_interval ──▶ ranges(t)
                 ranges(t) on record (journal_state) before any output of t runs
                 RDD(t) = one task per range piece, read in the Python workers
    recompute t  (executor loss, driver restart) ──▶ the recorded ranges(t), never new ones
    complete t   commit ranges(t)'s ends to the consumer group (monitoring only)

A restarted driver takes back the positions and every interval's ranges from the journal:
intervals it recomputes read their recorded ranges, and the intervals after them start
where the last recorded one ended, so every offset is read by exactly one interval.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar

from dstream.clock import SystemClock
from dstream.kafka.client import consumer_settings
from dstream.kafka.metadata import KafkaOffsets
from dstream.kafka.ranges import (
    TP,
    OffsetRange,
    cut_at_time,
    describe_ranges,
    parse_offset_reset,
    plan_interval,
    split_ranges,
    starting_positions,
)
from dstream.kafka.reader import Settings, TaskSpec, message_chunks, value_arrays
from dstream.sources.base import InputDStream, generated_partitions
from dstream.time import Duration, Time

if TYPE_CHECKING:
    from pyspark import RDD

    from dstream.functions import UserFunction
    from dstream.streams.graph import DStreamGraph

__all__ = ["KafkaInputDStream", "SourceOptions"]

log = logging.getLogger(__name__)

# Messages -> records, per chunk of messages (see dstream.kafka.reader).
Converter = Callable[[list[Any]], Iterable[Any]]


class SourceOptions:
    """The knobs of one Kafka stream (validated by dstream.kafka.createDirectStream)."""

    def __init__(
        self,
        *,
        max_per_partition: int | None,
        max_per_task: int | None,
        min_split: int,
        fail_on_data_loss: bool,
        commit_offsets: bool,
        poll_timeout_s: float,
        driver_timeout_s: float,
        ranges_remember: Duration,
        cut_at: str = "auto",
    ) -> None:
        self.max_per_partition = max_per_partition
        self.max_per_task = max_per_task
        self.min_split = min_split
        self.fail_on_data_loss = fail_on_data_loss
        self.commit_offsets = commit_offsets
        self.poll_timeout_s = poll_timeout_s
        self.driver_timeout_s = driver_timeout_s
        self.ranges_remember = ranges_remember
        self.cut_at = cut_at  # "auto" | "time" | "end" (createDirectStream's cutRangesAt)


class KafkaInputDStream(InputDStream):
    # Every interval's ranges are on record (and in the metadata journal), and Kafka keeps
    # the records until retention deletes them.
    durable = True

    def __init__(
        self,
        graph: DStreamGraph,
        topics: list[str],
        params: dict[str, Any],
        from_offsets: dict[TP, int],
        options: SourceOptions,
        *,
        converter: Converter | None,
        as_text: bool = True,
        name: str,
        user_functions: Iterable[UserFunction] = (),
    ) -> None:
        super().__init__(graph, name=name, user_functions=user_functions)
        self._topics = list(topics)
        self._params = dict(params)
        self._from_offsets = dict(from_offsets)
        self._options = options
        self._start_at = parse_offset_reset(params)
        # None: the columnar reader (Arrow arrays of values, text or binary).
        self._converter = converter
        self._as_text = as_text
        self._records_are_batches = converter is None
        self._settings: Settings = tuple(sorted(consumer_settings(params).items()))

    # What changes every interval is journaled separately (journal_state), not with the graph.
    _transient: ClassVar[tuple[str, ...]] = (
        "_offsets",
        "_state_lock",
        "_positions",
        "_ranges",
        "_notes",
        "_planned_until",
    )

    def _init_transient(self) -> None:
        super()._init_transient()
        self._offsets: KafkaOffsets | None = None
        self._state_lock = threading.Lock()
        # The next offset to read per topic-partition (None until start or restore).
        self._positions: dict[TP, int] | None = None
        # Batch time -> its ranges, kept while the interval may be computed again.
        self._ranges: dict[Time, list[OffsetRange]] = {}
        self._notes: dict[Time, list[str]] = {}
        # The latest interval whose ranges were decided: an interval up to it without
        # recorded ranges can never be read again exactly.
        self._planned_until: Time | None = None

    # ---- start -----------------------------------------------------------------------------
    def _client(self) -> KafkaOffsets:
        if self._offsets is None:
            self._offsets = KafkaOffsets(self._params)
        return self._offsets

    def validate(self) -> None:
        """Check that the topics exist and fix where the stream starts: "latest" means the
        log ends as of ``ssc.start()`` (a restored stream keeps its journaled positions)."""
        with self._state_lock:
            known = {t for t, _ in self._positions or {}}
        fresh = [t for t in self._topics if t not in known]
        if not fresh:
            return
        timeout = max(30.0, self._options.driver_timeout_s)
        snap = self._client().snapshot(fresh, timeout, settle=True)
        servers = self._params["bootstrap.servers"]
        if snap.missing_topics:
            raise ValueError(
                f"{self._operator}(): topic(s) {', '.join(sorted(snap.missing_topics))} do not "
                f"exist on bootstrap.servers {servers}; create them first (dstream never creates "
                "topics), or correct the names"
            )
        unanswered = sorted({t for t in fresh if not any(tp[0] == t for tp in snap.available)})
        if unanswered or snap.problems:
            raise ConnectionError(
                f"{self._operator}(): Kafka at bootstrap.servers {servers} did not give the "
                f"partitions and offsets of {', '.join(unanswered or fresh)} within "
                f"{timeout:g} s ({'; '.join(snap.problems) or 'no answer'}); check that the "
                "brokers are up and reachable from the driver"
            )
        wanted = {tp: o for tp, o in self._from_offsets.items() if tp[0] in fresh}
        start = starting_positions(snap.available, wanted, self._start_at)
        with self._state_lock:
            self._positions = {**(self._positions or {}), **start}
        log.info("%s starts at %s", self.label, start)

    # ---- every interval --------------------------------------------------------------------
    def _read(self, time: Time) -> RDD[Any] | None:
        with self._state_lock:
            ranges = self._ranges.get(time)
            planned = self._planned_until
        if ranges is None:
            if planned is not None and time <= planned:
                raise RuntimeError(
                    f"{self.label}: the offset ranges of interval {time} were not kept (they "
                    f"are kept for {self._options.ranges_remember} or the widest window), so "
                    "it cannot be recomputed exactly; raise createDirectStream(..., "
                    "rangesRemember=) above the state checkpoint interval"
                )
            ranges = self._plan(time)
        return self._rdd(time, ranges)

    def _plan(self, time: Time) -> list[OffsetRange]:
        with self._state_lock:
            positions = dict(self._positions or {})
        snap = self._client().snapshot(self._topics, self._options.driver_timeout_s)
        available = snap.available
        if self._cut_at_time(time) and available:
            after = self._client().offsets_after(
                list(available), time.ms, self._options.driver_timeout_s
            )
            available = cut_at_time(available, positions, after)
        plan = plan_interval(
            positions,
            available,
            snap.missing_topics,
            max_per_partition=self._max_per_partition(len(snap.available)),
            fail_on_data_loss=self._options.fail_on_data_loss,
        )
        notes = snap.problems + plan.notes
        for note in notes:
            log.warning("%s, interval %s: %s", self.label, time, note)
        with self._state_lock:
            self._ranges[time] = plan.ranges
            self._notes[time] = notes
            self._positions = plan.positions
            self._planned_until = time
        return plan.ranges

    def _cut_at_time(self, time: Time) -> bool:
        """Whether interval ``time``'s ranges end at its own time (record timestamps)."""
        mode = getattr(self._options, "cut_at", "auto")  # programs journaled before it: auto
        if mode != "auto":
            return bool(mode == "time")
        clock = self._graph.clock
        return isinstance(clock, SystemClock) and clock.now() - time > self.slide_duration

    def _max_per_partition(self, partitions: int) -> int | None:
        """maxRecordsPerPartition, lowered by backpressure to the interval's allowance
        spread evenly over the partitions (as pyspark.streaming's direct stream did)."""
        cap = self._options.max_per_partition
        allowed = self._records_allowed()
        if allowed is None or partitions == 0:
            return cap
        share = max(1, allowed // partitions)
        return share if cap is None else min(cap, share)

    def _rdd(self, time: Time, ranges: list[OffsetRange]) -> RDD[Any]:
        sc = self._graph.sc
        pieces = split_ranges(
            ranges,
            max_per_task=self._options.max_per_task,
            min_tasks=int(sc.defaultParallelism),
            min_split=self._options.min_split,
        )
        if not pieces:
            self.set_record_count(time, 0)
            return sc.emptyRDD()
        specs: list[TaskSpec] = [
            (time.ms, r.topic, r.partition, r.fromOffset, r.untilOffset) for r in pieces
        ]
        settings, poll = self._settings, self._options.poll_timeout_s
        convert, as_text = self._converter, self._as_text

        def read_piece(split: int) -> Iterator[Any]:
            if convert is None:
                return value_arrays(settings, specs[split], poll, as_text)
            return (
                record
                for chunk in message_chunks(settings, specs[split], poll)
                for record in convert(chunk)
            )

        return generated_partitions(sc, len(specs), read_piece)

    def input_metadata(self, time: Time) -> dict[str, Any]:
        with self._state_lock:
            ranges = list(self._ranges.get(time, ()))
            notes = list(self._notes.get(time, ()))
        meta: dict[str, Any] = {
            "offsetRanges": [r.as_dict() for r in ranges],
            "Description": describe_ranges(ranges),
        }
        if notes:
            meta["notes"] = notes
        return meta

    def _on_batch_completed(self, time: Time) -> None:
        super()._on_batch_completed(time)
        if not self._options.commit_offsets:
            return
        with self._state_lock:
            ranges = list(self._ranges.get(time, ()))
        if ranges:
            self._client().commit(ranges)

    # ---- the metadata journal --------------------------------------------------------------
    def journal_state(self) -> dict[str, Any] | None:
        with self._state_lock:
            return {
                "topics": list(self._topics),
                "positions": sorted([t, p, o] for (t, p), o in (self._positions or {}).items()),
                "ranges": {
                    t.ms: [[r.topic, r.partition, r.fromOffset, r.untilOffset] for r in rs]
                    for t, rs in self._ranges.items()
                },
                "planned_until": None if self._planned_until is None else self._planned_until.ms,
            }

    def restore_state(self, state: dict[str, Any]) -> None:
        wanted = set(self._topics)
        dropped = sorted(set(state["topics"]) - wanted)
        if dropped:
            log.warning(
                "%s no longer reads topic(s) %s that the checkpoint read; their positions are "
                "dropped",
                self.label,
                ", ".join(dropped),
            )
        with self._state_lock:
            self._positions = {(t, p): o for t, p, o in state["positions"] if t in wanted}
            self._ranges = {
                Time(ms): [OffsetRange(*r) for r in rs] for ms, rs in state["ranges"].items()
            }
            until = state.get("planned_until")
            self._planned_until = None if until is None else Time(until)

    def _clear_metadata(self, time: Time) -> None:
        super()._clear_metadata(time)
        # Ranges are a few numbers per partition: keep them at least `ranges_remember`, and
        # while a state downstream may rebuild from its last checkpoint (one that lags or
        # fails holds them), so an interval since that checkpoint can be recomputed after a
        # driver restart.
        window = self._remember_duration or self.slide_duration
        forget = time - max(window, self._options.ranges_remember)
        floor = self._states_floor()
        if floor is not None:
            forget = min(forget, floor - window)
        with self._state_lock:
            for t in [t for t in self._ranges if t <= forget]:
                del self._ranges[t]
                self._notes.pop(t, None)
