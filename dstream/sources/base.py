"""Input streams: the leaves of the graph.

An input stream produces one RDD per batch interval from something outside Spark. It also
reports how many records each interval read. Where the count is known when the RDD is made
(a list, a received block, the rate source) the source says so; otherwise the RDD's
partitions count their records as they are read, into an accumulator keyed by
``(batch time, partition)`` — a recomputed or speculative partition writes the same key
again, so the count is not doubled by recovery.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar

from pyspark.accumulators import AccumulatorParam

from dstream.streams.base import DStreamCore
from dstream.time import Duration, Time

if TYPE_CHECKING:
    from pyspark import RDD
    from pyspark.accumulators import Accumulator

    from dstream.functions import UserFunction
    from dstream.streams.graph import DStreamGraph
    from dstream.streams.state_base import StateStream

__all__ = ["InputDStream", "KeyedCounts", "generated_partitions"]


class KeyedCounts(AccumulatorParam[dict[tuple[int, int], int]]):
    """Accumulator of {(batch ms, partition): records}; merging overwrites, never adds."""

    def zero(self, value: dict[tuple[int, int], int]) -> dict[tuple[int, int], int]:
        return {}

    def addInPlace(
        self, value1: dict[tuple[int, int], int], value2: dict[tuple[int, int], int]
    ) -> dict[tuple[int, int], int]:
        value1.update(value2)
        return value1


def _one(_record: object) -> int:
    return 1


def generated_partitions(
    sc: Any, partitions: int, generate: Callable[[int], Iterable[Any]]
) -> RDD[Any]:
    """An RDD of ``partitions`` partitions whose partition ``p`` is ``generate(p)``, run on
    the executors (a source whose records are made or fetched there, not sent from the
    driver).

    Each partition holds its own index as its one input record, and ``generate`` is called
    on it. Not ``sc.parallelize([], n).mapPartitionsWithIndex(...)``: with empty partitions
    whose input is never read, PySpark does not hand the Python worker back to its pool
    (measured: a new worker process per task, every interval, each importing the engine
    again, ~200 ms of a light interval's ~300 ms; tests/integration/test_sources.py)."""

    def run(indices: Iterable[int]) -> Iterator[Any]:
        for p in indices:
            yield from generate(p)

    rdd: RDD[Any] = sc.parallelize(range(partitions), partitions).mapPartitions(run)
    return rdd


class InputDStream(DStreamCore[Any]):
    # Sources that know their counts up front turn this off.
    _counts_in_tasks: bool = True
    # Each element is a batch of records (an Arrow array): count its length, not 1.
    _records_are_batches: bool = False
    # A durable source can produce any past interval again (files on record, the rate
    # source's seeds); others (a queue, a socket) only the intervals they still remember.
    durable: bool = False

    def __init__(
        self, graph: DStreamGraph, *, name: str, user_functions: Iterable[UserFunction] = ()
    ) -> None:
        super().__init__(graph, (), name=name, user_functions=user_functions)
        self._graph_batch = graph.batch_duration
        graph.add_input(self)

    _transient: ClassVar[tuple[str, ...]] = (
        "_known_counts",
        "_counter",
        "_counter_lock",
        "_latest",
        "_downstream_states",
        "_rate_limit",
    )

    def _init_transient(self) -> None:
        super()._init_transient()
        self._known_counts: dict[Time, int] = {}
        self._counter: Accumulator[dict[tuple[int, int], int]] | None = None
        self._counter_lock = threading.Lock()
        self._latest: Time | None = None
        self._downstream_states: list[StateStream] | None = None
        # Records per second this source may read (backpressure, dstream.scheduler.elastic);
        # None: no limit. Sources that can cut an interval short honour it.
        self._rate_limit: float | None = None

    @property
    def slide_duration(self) -> Duration:
        return self._graph_batch

    # ---- how long input is kept for the states downstream -------------------------------
    def _states_downstream(self) -> list[StateStream]:
        """The state streams whose rebuilds may read this source (found once, from the graph)."""
        if self._downstream_states is None:
            from dstream.streams.state_base import StateStream

            def reads_me(stream: DStreamCore[Any], seen: set[int]) -> bool:
                if stream is self:
                    return True
                if id(stream) in seen:
                    return False
                seen.add(id(stream))
                return any(reads_me(p, seen) for p in stream.dependencies)

            self._downstream_states = [
                s for s in self._graph.streams if isinstance(s, StateStream) and reads_me(s, set())
            ]
        return self._downstream_states

    def _states_floor(self) -> Time | None:
        """The oldest replay floor of the states downstream (None: no state reads this
        source): a state rebuilt now, or by a driver restarted now, folds in its parent's
        intervals after its floor (its last published checkpoint, or the start), and that
        parent may be a window over this source reaching back up to this stream's remember
        duration before it. A checkpoint that lags or fails holds the floor back with it."""
        floors = (s.replay_floor() for s in self._states_downstream())
        return min((f for f in floors if f is not None), default=None)

    # ---- what a source implements ---------------------------------------------------------
    def _read(self, time: Time) -> RDD[Any] | None:
        """The RDD of the interval ending at ``time``."""
        raise NotImplementedError

    def start(self) -> None:
        """Called by ``ssc.start()``, before the first interval (receivers connect here)."""

    def stop(self) -> None:
        """Called by ``ssc.stop()``."""

    def validate(self) -> None:
        """Check the source is usable; called by ``ssc.start()``."""

    def description(self) -> str:
        """What this source reads, for progress records and the UI."""
        return self._operator

    @property
    def rate_limit(self) -> float | None:
        """The records/s backpressure lets this source read next (None: no limit)."""
        return self._rate_limit

    def receivers(self) -> dict[int, tuple[str, tuple[str, int]]]:
        """index -> (executor id, address) of each receiver of this source running on an
        executor now (none for a source without receivers)."""
        return {}

    def set_rate_limit(self, rate: float | None) -> None:
        """Backpressure's new rate (records/s; None: no limit). Sources that wait for room
        override this to wake their waiters."""
        self._rate_limit = rate

    def _records_allowed(self) -> int | None:
        """Records one interval may read under backpressure (None: no limit), at least 1."""
        rate = self._rate_limit
        if rate is None:
            return None
        return max(1, int(rate * self._graph_batch.ms / 1000))

    def _held_limit(self) -> int:
        """Records a receiving source (socket, receiver) holds for the next interval before
        it stops taking more: receiver_max_buffered, or under backpressure the interval's
        allowance if lower."""
        most = self._graph.settings.receiver_max_buffered
        allowed = self._records_allowed()
        return most if allowed is None else min(most, allowed)

    # ---- counting -------------------------------------------------------------------------
    def _can_compute(self, time: Time) -> bool:
        if time in self._generated:
            return True
        if self._zero_time is None or not self._is_time_valid(time):
            return False
        return self.durable or self._latest is None or time > self._latest

    def _compute(self, time: Time) -> RDD[Any] | None:
        if not self.durable and self._latest is not None and time <= self._latest:
            raise RuntimeError(
                f"{self.label} was asked again for interval {time}, which it no longer "
                "remembers, and it cannot produce past data again; make the windows or "
                "remember() durations cover what the program reads, or use a durable source"
            )
        if self._latest is None or time > self._latest:
            self._latest = time
        rdd = self._read(time)
        if rdd is None or not self._counts_in_tasks or time in self._known_counts:
            return rdd
        counter = self._ensure_counter()
        ms = time.ms
        size = len if self._records_are_batches else _one

        def count(split: int, iterator: Iterable[Any]) -> Iterator[Any]:
            n = 0
            for record in iterator:
                n += size(record)
                yield record
            counter.add({(ms, split): n})

        return rdd.mapPartitionsWithIndex(count, preservesPartitioning=True)

    def _ensure_counter(self) -> Accumulator[dict[tuple[int, int], int]]:
        with self._counter_lock:
            if self._counter is None:
                self._counter = self._graph.sc.accumulator({}, KeyedCounts())
            return self._counter

    def set_record_count(self, time: Time, count: int) -> None:
        """A source that knows how many records an interval has says so here."""
        self._known_counts[time] = count

    def input_metadata(self, time: Time) -> dict[str, Any]:
        """What the batch's ``StreamInputInfo`` says about this stream's input of ``time``
        besides its count (a file stream: the files it read)."""
        return {}

    def take_record_count(self, time: Time) -> int:
        """Records read for ``time`` (called once, when the batch completes)."""
        known = self._known_counts.pop(time, None)
        if known is not None:
            return known
        if self._counter is None:
            return 0
        counts = self._counter._value
        total = 0
        # Older keys too: a window recomputing an old partition must not leak entries.
        for key in [k for k in list(counts) if k[0] <= time.ms]:
            n = counts.pop(key, 0)
            if key[0] == time.ms:
                total += n
        return total
