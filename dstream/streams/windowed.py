"""Windows: the records of the last ``windowDuration``, every ``slideDuration``, and the
incremental reductions over them (the paper's Sec. 3.3, Figure 4).

Without an inverse function (Figure 4a) each interval is reduced once, into a persisted
partial; a window combines the partials of the intervals it covers — raw records are never
read again. With an inverse (Figure 4b) the window's value is the previous window's value,
plus the intervals that entered, minus those that left (see :mod:`dstream.streams.window_spec` for
which ones); the state carries the partials of the intervals still in the window, so those
that leave are subtracted from the state itself. Partials, shuffled intervals and window
states share one hash partitioner, so these combinations are narrow: Spark unions them
partition by partition, no shuffle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from dstream.functions import UserFunction
from dstream.storage.checkpoint import partition_path, read_partition
from dstream.streams.base import STATE, DStreamCore
from dstream.streams.copartitioned import (
    co_partitioned_union,
    partition_by,
    sectioned_union,
)
from dstream.streams.fidelity import Loss
from dstream.streams.rescale import partition_of, regroup_partitions
from dstream.streams.state_base import StateStream
from dstream.streams.tentative_pass import substitution
from dstream.streams.window_spec import WindowSpec, entering, window_times
from dstream.tasks.state_merge import combine_locally, fold_window, regroup_window
from dstream.time import Duration, Time

if TYPE_CHECKING:
    from pyspark import RDD

    from dstream.streams.tentative_pass import Saved, StateChain

__all__ = ["ReducedWindowedDStream", "WindowedDStream"]


class WindowedDStream(DStreamCore[Any]):
    """The union of the parent's RDDs inside each window. The parent is persisted, so each
    interval's records are computed once however many windows they fall in."""

    def __init__(self, parent: DStreamCore[Any], spec: WindowSpec, *, name: str = "window") -> None:
        super().__init__(parent.graph, [parent], name=name)
        self._spec = spec
        if parent.storage_level is None:
            parent.set_storage_level(STATE)

    @property
    def slide_duration(self) -> Duration:
        return self._spec.slide

    def _parent_remember_duration(self) -> Duration | None:
        return (self._remember_duration or self._spec.slide) + self._spec.window

    def _loss_parents(self, time: Time) -> list[tuple[DStreamCore[Any], Time]]:
        assert self._zero_time is not None
        parent = self._parents[0]
        return [(parent, u) for u in window_times(time, self._spec, self._zero_time)]

    def _compute(self, time: Time) -> RDD[Any] | None:
        assert self._zero_time is not None
        rdds = [
            r
            for r in (
                self._parents[0]._get_or_compute(u)
                for u in window_times(time, self._spec, self._zero_time)
            )
            if r is not None
        ]
        if not rdds:
            return self._graph.sc.emptyRDD()
        return co_partitioned_union(rdds)


class ReducedWindowedDStream(StateStream):
    """Keyed window state with an inverse function: one
    :class:`~dstream.tasks.state_merge.WindowPartition` record per partition, holding each
    key's value over the window and, for the intervals still in it, their own partial values.

    Each interval, the parent's records are combined within each map task and shuffled into
    the state's partitions; one Python pass per partition then reduces them, adds them to
    the previous state, and subtracts (with the inverse function) the partials of the
    intervals that left the window, taken from the state itself. The per-interval partials
    are not separate cached RDDs: an interval costs one shuffle and one pass, and nothing of
    the window's past is kept outside the state. Keys whose contributions have all left the
    window are dropped.
    """

    _transient: ClassVar[tuple[str, ...]] = (*StateStream._transient, "_shuffled")
    # The state is the window's partials: a replay of the window's inputs rebuilds it.
    _unbounded: ClassVar[str | None] = None
    # One record per partition, regrouped by key with its partials (regroup_window).
    fixed_partitions: ClassVar[str | None] = None

    def __init__(
        self,
        parent: DStreamCore[Any],
        func: Callable[[Any, Any], Any],
        inv_func: Callable[[Any, Any], Any],
        spec: WindowSpec,
        num_partitions: int,
        user_functions: Iterable[UserFunction],
    ) -> None:
        super().__init__(
            [parent],
            name="reduceByKeyAndWindow",
            num_partitions=num_partitions,
            user_functions=user_functions,
        )
        self._spec = spec
        self._func, self._inv = func, inv_func

    def _init_transient(self) -> None:
        super()._init_transient()
        # Each parent interval's shuffled records, kept while a rebuild may fold them again.
        self._shuffled: dict[Time, RDD[Any]] = {}

    @property
    def slide_duration(self) -> Duration:
        return self._spec.slide

    @property
    def _window(self) -> Duration | None:
        return self._spec.window

    def _shape(self) -> dict[str, Any]:
        return {**super()._shape(), "window_ms": self._spec.window.ms, "format": "ring"}

    def _parent_remember_duration(self) -> Duration | None:
        # A rebuild folds the parent's intervals since its checkpoint (which lags by up to
        # replay_span), or the whole window if there is no checkpoint yet.
        own = self._remember_duration or self._spec.slide
        return own + max(self._spec.window, self.replay_span()) + self._spec.slide

    def _interval(self, time: Time) -> RDD[Any] | None:
        """The parent's records of ``time``, combined within each map task and shuffled into
        this state's partitions: the raw shuffle output, read by the fold's own pass."""
        rdd = self._shuffled.get(time)
        if rdd is None:
            parent = self._parents[0]._get_or_compute(time)
            if parent is None:
                return None
            func = self._func
            combined = parent.mapPartitions(
                lambda it: iter(combine_locally(it, func).items()), preservesPartitioning=True
            )
            count = self._schedule.at(time.ms)
            rdd = self._shuffled[time] = partition_by(combined, count)
        return rdd

    def _fit_state(self, rdd: RDD[Any], count: int, have: int) -> RDD[Any]:
        """A window state of ``have`` partitions (one WindowPartition record each) in
        ``count``: each new partition gathers its keys, totals and partials from the old
        partitions they can come from (no shuffle; the JVM shim's Rescaled RDD)."""
        if have == count:
            return rdd

        def build(split: int, records: Iterable[Any]) -> Iterable[Any]:
            parts = [wp for _, wp in records]
            yield None, regroup_window(parts, lambda k: partition_of(k, count) == split)

        return regroup_partitions(self._graph.sc, rdd, have, count, build)

    def _fold(
        self,
        time: Time,
        state: RDD[Any] | None,
        times: list[Time],
        base_ms: int | None = None,
        saved: Saved | None = None,
    ) -> RDD[Any]:
        """State of ``time``: ``state`` (or, with ``base_ms``, the checkpoint of that interval,
        read by the fold's own pass; or nothing) with the parent's ``times`` folded in.
        ``saved``: where a tentative pass reads a lost block of ``state`` back from."""
        count = self._schedule.at(time.ms)
        if base_ms is not None and self._schedule.at(base_ms) != count:
            # A checkpoint from before a rescale: read at its count, then regrouped.
            have = self._schedule.at(base_ms)
            state, base_ms = self._fit_state(self._read_checkpoint(base_ms), count, have), None
        elif state is not None:
            state = self._fit_state(state, count, self._schedule.at((time - self._spec.slide).ms))
        groups = [[] if state is None else [state]]
        for u in times:
            rdd = self._interval(u)
            groups.append([] if rdd is None else [self._fit(rdd, count, self._schedule.at(u.ms))])
        union = sectioned_union(self._section_marks(), count, groups)
        func, inv = self._func, self._inv
        times_ms, keep_after_ms = [u.ms for u in times], (time - self._spec.window).ms
        wrap, counter = substitution(saved), self._section_counter(times, saved)
        if base_ms is None and wrap is None and counter is None:
            return union.mapPartitions(
                lambda it: fold_window(it, func, inv, times_ms, keep_after_ms), True
            )
        directory = None if base_ms is None else self._checkpoint_dir(base_ms)
        files = self._files

        def fold_partition(i: int, it: Iterable[Any]) -> Iterable[Any]:
            if wrap is not None:
                it = wrap(i, it)
            base = (
                None if directory is None else read_partition(files, partition_path(directory, i))
            )
            heard = None if counter is None else counter(i)
            return fold_window(it, func, inv, times_ms, keep_after_ms, base, heard)

        return union.mapPartitionsWithIndex(fold_partition, True)

    def _tentative_step(
        self, time: Time, previous: RDD[Any], times: list[Time], saved: Saved | None
    ) -> RDD[Any]:
        return self._fold(time, previous, times, saved=saved)

    def _tentative_loss(self, time: Time, chain: StateChain) -> Loss:
        # The window holds its last intervals; a lost partition read back from the
        # checkpoint lacks those after the checkpoint up to the last exact state (read as
        # empty: every one before that).
        assert self._zero_time is not None
        inside = [u.ms for u in window_times(time, self._spec, self._zero_time)]
        since = -1 if chain.checkpoint_ms is None else chain.checkpoint_ms
        rates, lost = [], []
        for p in range(self._schedule.at(time.ms)):
            held = sum(self._ledger.rate(u, p) for u in inside)
            missing = 0.0
            if p in chain.missing:
                missing = sum(
                    self._ledger.rate(u, p) for u in inside if since < u <= chain.exact_time.ms
                )
            rates.append(held)
            lost.append(min(1.0, missing / held) if held > 0 else float(p in chain.missing))
        return Loss(tuple(rates), tuple(lost))

    def _step(self, time: Time, previous: RDD[Any]) -> RDD[Any]:
        assert self._zero_time is not None
        return self._fold(time, previous, entering(time, self._spec, self._zero_time))

    def _rebuild(self, time: Time, base_ms: int | None) -> RDD[Any] | None:
        assert self._zero_time is not None
        times = window_times(time, self._spec, self._zero_time)
        if base_ms is not None:
            times = [u for u in times if u.ms > base_ms]
        if not self._available(self._parents[0], times, time):
            return None
        return self._fold(time, None, times, base_ms)

    def _clear_metadata(self, time: Time) -> None:
        super()._clear_metadata(time)
        keep = self._parent_remember_duration()
        assert keep is not None
        with self._lock:
            for t in [t for t in self._shuffled if t <= time - keep]:
                del self._shuffled[t]
