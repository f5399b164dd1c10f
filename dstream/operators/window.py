"""Windows: the records of the last ``windowDuration``, every ``slideDuration``, and the
incremental reductions over them (the paper's Sec. 3.3, Figure 4).

Without an inverse function (Figure 4a) each interval is reduced once, into a persisted
partial; a window combines the partials of the intervals it covers — raw records are never
read again. With an inverse (Figure 4b) the window's value is the previous window's value,
plus the partials that entered, minus those that left (see :mod:`dstream.windowing` for
which ones). Partials and window states share one hash partitioner, so these combinations
are narrow: Spark unions them partition by partition, no shuffle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from dstream.dstream import DStream
from dstream.functions import UserFunction
from dstream.operators.checkpointed import StateStream
from dstream.operators.partitioned import co_partitioned_union, memory_only, sectioned_union
from dstream.operators.state_logic import merge_window
from dstream.time import Duration, Time
from dstream.windowing import (
    WindowSpec,
    entering,
    leaving,
    window_difference,
    window_times,
)

if TYPE_CHECKING:
    from pyspark import RDD

__all__ = ["ReducedWindowedDStream", "WindowedDStream"]


class WindowedDStream(DStream[Any]):
    """The union of the parent's RDDs inside each window. The parent is persisted, so each
    interval's records are computed once however many windows they fall in."""

    def __init__(self, parent: DStream[Any], spec: WindowSpec, *, name: str = "window") -> None:
        super().__init__(parent._ssc, [parent], name=name)
        self.spec = spec
        if parent.storage_level is None:
            parent.storage_level = memory_only()

    @property
    def slide_duration(self) -> Duration:
        return self.spec.slide

    def parent_remember_duration(self) -> Duration | None:
        return (self.remember_duration or self.spec.slide) + self.spec.window

    def compute(self, time: Time) -> RDD[Any] | None:
        assert self.zero_time is not None
        rdds = [
            r
            for r in (
                self._parents[0].get_or_compute(u)
                for u in window_times(time, self.spec, self.zero_time)
            )
            if r is not None
        ]
        if not rdds:
            return self._ssc.sparkContext.emptyRDD()
        return co_partitioned_union(rdds)


class ReducedWindowedDStream(StateStream):
    """Keyed window state ``(key, (value, intervals contributing))``, kept incrementally with
    an inverse function. Keys whose contributions have all left the window are dropped."""

    def __init__(
        self,
        partials: DStream[Any],
        func: Callable[[Any, Any], Any],
        inv_func: Callable[[Any, Any], Any],
        spec: WindowSpec,
        num_partitions: int,
        user_functions: Iterable[UserFunction],
    ) -> None:
        super().__init__(
            [partials],
            name="reduceByKeyAndWindow",
            num_partitions=num_partitions,
            user_functions=user_functions,
        )
        self.spec = spec
        self._func, self._inv = func, inv_func

    @property
    def slide_duration(self) -> Duration:
        return self.spec.slide

    def shape(self) -> dict[str, Any]:
        return {**super().shape(), "window_ms": self.spec.window.ms}

    def parent_remember_duration(self) -> Duration | None:
        # Leaving partials go back to t - window - slide + parent slide; a rebuild reaches
        # back to its checkpoint's window.
        own = self.remember_duration or self.spec.slide
        return own + self.spec.window + self.spec.slide + self.replay_span()

    def _merge(self, state: list[RDD[Any]], enter: list[Time], leave: list[Time]) -> RDD[Any]:
        partials = self._parents[0]
        groups = [
            state,
            [r for r in (partials.get_or_compute(u) for u in enter) if r is not None],
            [r for r in (partials.get_or_compute(u) for u in leave) if r is not None],
        ]
        func, inv = self._func, self._inv
        union = sectioned_union(self._ssc.section_marks, self.num_partitions, groups)
        return union.mapPartitions(lambda it: merge_window(it, func, inv), True)

    def step(self, time: Time, previous: RDD[Any]) -> RDD[Any]:
        assert self.zero_time is not None
        zero, spec = self.zero_time, self.spec
        return self._merge([previous], entering(time, spec, zero), leaving(time, spec, zero))

    def rebuild(self, time: Time, base_ms: int | None) -> RDD[Any] | None:
        assert self.zero_time is not None
        zero, spec = self.zero_time, self.spec
        if base_ms is None:
            state, enter, leave = [], window_times(time, spec, zero), []
        else:
            base = Time(base_ms)
            state = [self.read_checkpoint(base_ms)]
            enter = window_difference(time, base, spec, zero)
            leave = window_difference(base, time, spec, zero)
        if not self.available(self._parents[0], enter + leave, time):
            return None
        return self._merge(state, enter, leave)
