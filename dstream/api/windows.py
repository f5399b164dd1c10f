"""The window family of DStream methods: window, reduceByWindow, reduceByKeyAndWindow (with
or without an inverse), countByWindow, countByValueAndWindow, groupByKeyAndWindow. The
stream classes behind them are in :mod:`dstream.streams.windowed`."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from dstream.api.keyed import KeyedOps
from dstream.streams.base import STATE
from dstream.streams.transformed import TransformedDStream
from dstream.streams.window_spec import window_spec
from dstream.streams.windowed import ReducedWindowedDStream, WindowedDStream
from dstream.tasks.state_merge import window_items

if TYPE_CHECKING:
    from dstream.dstream import DStream
    from dstream.streams.base import DStreamCore

T = TypeVar("T")

__all__ = ["WindowOps"]


class WindowOps(KeyedOps[T]):
    __slots__ = ()

    def window(self, windowDuration: object, slideDuration: object = None) -> DStream[T]:
        """Every ``slideDuration``, the records of the last ``windowDuration``.

        Both must be multiples of this stream's slide; seconds, '30s' or Durations.
        """
        spec = window_spec("window", windowDuration, slideDuration, self._node.slide_duration)
        return self._wrap(WindowedDStream(self._node, spec))

    def reduceByKeyAndWindow(
        self,
        func: Callable[[Any, Any], Any],
        invFunc: Callable[[Any, Any], Any] | None,
        windowDuration: object,
        slideDuration: object = None,
        numPartitions: int | None = None,
        filterFunc: Callable[[tuple[Any, Any]], bool] | None = None,
    ) -> DStream[tuple[Any, Any]]:
        """Reduce the values of each key over a sliding window.

        With ``invFunc`` (``invFunc(func(x, y), y) == x``) the window is maintained
        incrementally: cost per slide follows what enters and leaves, not the window's length.
        A key with no contribution left in the window is dropped by the engine. ``filterFunc``
        filters the output pairs.
        """
        name = "reduceByKeyAndWindow"
        spec = window_spec(name, windowDuration, slideDuration, self._node.slide_duration)
        n = self._num_partitions(numPartitions, name)
        uf = self._user(name, func)
        g = uf.guarded()
        ufs = [uf]
        result: DStream[Any]
        if invFunc is None:
            partials = self._rdd_op(name, lambda rdd: rdd.reduceByKey(g, n), [uf])
            partials._node.set_storage_level(STATE)
            windowed = self._wrap(WindowedDStream(partials._node, spec, name=name))
            result = windowed._rdd_op(name, lambda rdd: rdd.reduceByKey(g, n))
        else:
            inv_uf = self._user(name, invFunc, "invFunc")
            ufs.append(inv_uf)
            state = ReducedWindowedDStream(self._node, g, inv_uf.guarded(), spec, n, ufs)
            result = self._wrap(state)._rdd_op(
                name, lambda rdd: rdd.flatMap(window_items, preservesPartitioning=True)
            )
            result._node.set_checkpoint_target(state)
            _mark_narrow(result._node)  # one flatMap per partition
        if filterFunc is not None:
            fuf = self._user(name, filterFunc, "filterFunc")
            fg = fuf.guarded()
            filtered = result._rdd_op(name, lambda rdd: rdd.filter(fg), [fuf])
            filtered._node.set_checkpoint_target(result._node.checkpoint_target)
            _mark_narrow(filtered._node)
            result = filtered
        return result

    def reduceByWindow(
        self,
        reduceFunc: Callable[[T, T], T],
        invReduceFunc: Callable[[T, T], T] | None,
        windowDuration: object,
        slideDuration: object = None,
    ) -> DStream[T]:
        """Reduce all records of each window to one value (nothing for an empty window)."""
        keyed = self.map(lambda x: (None, x))
        reduced = keyed.reduceByKeyAndWindow(
            reduceFunc, invReduceFunc, windowDuration, slideDuration, 1
        )
        return reduced._rdd_op("reduceByWindow", lambda rdd: rdd.values())

    def countByWindow(self, windowDuration: object, slideDuration: object = None) -> DStream[int]:
        """The number of records in each window (0 for an empty one), kept incrementally."""
        per_interval = self.count().map(lambda c: (None, c))
        windowed = per_interval.reduceByKeyAndWindow(
            operator.add, operator.sub, windowDuration, slideDuration, 1
        )
        return windowed._rdd_op("countByWindow", lambda rdd: rdd.values())

    def countByValueAndWindow(
        self, windowDuration: object, slideDuration: object = None, numPartitions: int | None = None
    ) -> DStream[tuple[Any, int]]:
        """``(value, count)`` of the distinct values in each window, kept incrementally."""
        return self.map(lambda x: (x, 1)).reduceByKeyAndWindow(
            operator.add, operator.sub, windowDuration, slideDuration, numPartitions
        )

    def groupByKeyAndWindow(
        self, windowDuration: object, slideDuration: object = None, numPartitions: int | None = None
    ) -> DStream[tuple[Any, Iterable[Any]]]:
        """The values of each key over each window (each interval grouped once)."""
        from pyspark.resultiterable import ResultIterable

        grouped = self.mapValues(lambda v: [v]).reduceByKeyAndWindow(
            operator.add, None, windowDuration, slideDuration, numPartitions
        )
        return grouped._rdd_op("groupByKeyAndWindow", lambda rdd: rdd.mapValues(ResultIterable))


def _mark_narrow(node: DStreamCore[Any]) -> None:
    assert isinstance(node, TransformedDStream)  # what _rdd_op makes
    node.mark_narrow()
