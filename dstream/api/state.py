"""The state family of DStream methods: ``updateStateByKey`` (PySpark's) and ``track`` (the
paper's). The stream classes behind them are in :mod:`dstream.streams.keyed_state`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from dstream.api.windows import WindowOps
from dstream.functions import QUARANTINE_ADVICE
from dstream.streams.copartitioned import partition_by
from dstream.streams.keyed_state import StateDStream, TaggedEvents, TrackDStream, TrackView
from dstream.tasks.track_state import TrackFunctions
from dstream.time import to_duration

if TYPE_CHECKING:
    from pyspark import RDD

    from dstream.dstream import DStream, TrackStream

T = TypeVar("T")

__all__ = ["StateOps"]


class StateOps(WindowOps[T]):
    __slots__ = ()

    def updateStateByKey(
        self,
        updateFunc: Callable[[list[Any], Any], Any],
        numPartitions: int | None = None,
        initialRDD: RDD[tuple[Any, Any]] | Iterable[tuple[Any, Any]] | None = None,
    ) -> DStream[tuple[Any, Any]]:
        """Carry a state per key across intervals: each interval, every key with a state or
        new values gets ``updateFunc(new values, previous state or None)``; returning None
        removes the key. Values reach ``updateFunc`` in input order."""
        from pyspark import RDD

        name = "updateStateByKey"
        uf = self._user(name, updateFunc, "updateFunc")
        n = self._num_partitions(numPartitions, name)
        initial = None
        if initialRDD is not None:
            rdd = (
                initialRDD
                if isinstance(initialRDD, RDD)
                else self._node.graph.sc.parallelize(list(initialRDD))
            )
            initial = partition_by(rdd, n)
        events = TaggedEvents(self._node, n, name)
        return self._wrap(StateDStream(events, uf.guarded(QUARANTINE_ADVICE), initial, [uf]))

    def track(
        self,
        initialize: Callable[[Any, Any], Any],
        update: Callable[[Any, Any, Any], Any],
        timeout: object,
        numPartitions: int | None = None,
    ) -> TrackStream:
        """Turn ``(key, event)`` records into ``(key, state)`` (the paper's Sec. 3.3).

        ``initialize(key, event)`` makes the state of a key from its first event;
        ``update(key, state, event)`` returns the new state, or None to drop the key; a key
        with no event for ``timeout`` (a multiple of this stream's slide) is dropped.
        Each interval costs in proportion to the keys that received events or timed out.

        >>> sessions = events.track(
        ...     lambda key, ev: 1,                                # initialize
        ...     lambda key, st, ev: None if ev == "exit" else 1,  # update
        ...     "30s")                                            # timeout
        ... # doctest: +SKIP
        >>> counts = sessions.count()  # doctest: +SKIP
        """
        name = "track"
        init_uf = self._user(name, initialize, "initialize")
        update_uf = self._user(name, update, "update")
        limit = to_duration(timeout, "track() timeout")
        slide = self._node.slide_duration
        if not limit.is_multiple_of(slide):
            suggestion = max(1, limit.ms // slide.ms) * slide.ms
            raise ValueError(
                f"track() timeout {limit} must be a multiple of the stream's slide {slide}, "
                f"e.g. {suggestion} ms"
            )
        n = self._num_partitions(numPartitions, name)
        fns = TrackFunctions(
            init_uf.guarded(QUARANTINE_ADVICE),
            update_uf.guarded(QUARANTINE_ADVICE),
            limit.ms,
            slide.ms,
        )
        events = TaggedEvents(self._node, n, name)
        view = self._wrap(TrackView(TrackDStream(events, fns, [init_uf, update_uf])))
        return cast("TrackStream", view)
