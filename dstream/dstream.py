"""The DStream class users hold: a handle over one node of the program's graph (the engine's
:class:`~dstream.streams.base.DStreamCore`). Its methods come family by family, one module
each; each builds the node that does the work and returns a handle over it:

* :mod:`dstream.api.common` — naming, persistence, checkpoints, remember, slice,
* :mod:`dstream.api.stateless` — map, filter, reduce, count, transform, union, ...
* :mod:`dstream.api.keyed` — reduceByKey, groupByKey, joins, cogroup, ...
* :mod:`dstream.api.windows` and :mod:`dstream.api.state` — windows, updateStateByKey, track,
* :mod:`dstream.api.outputs` — foreachRDD, pprint, saveAsTextFiles, save,
* :mod:`dstream.api.queries` — live queries: latest, at, snapshot, lookup, toDF, SQL views.
"""

from __future__ import annotations

from typing import Any, TypeVar

from dstream.api.common import node_of
from dstream.api.outputs import OutputOps
from dstream.api.queries import QueryOps
from dstream.streams.base import DStreamCore
from dstream.streams.keyed_state import TrackView

T = TypeVar("T")

__all__ = ["DStream", "TrackStream", "handle_for", "node_of"]


class DStream(OutputOps[T], QueryOps[T]):
    """A discretized stream: one RDD per interval, built lazily from its parents' RDDs.

    >>> counts = lines.flatMap(str.split).map(lambda w: (w, 1)).reduceByKey(int.__add__)
    ... # doctest: +SKIP
    """

    __slots__ = ()

    def _wrap(self, node: DStreamCore[Any]) -> DStream[Any]:
        return handle_for(node)


class TrackStream(DStream[Any]):
    """The stream ``track()`` returns: ``(key, state)`` for every live key."""

    __slots__ = ()

    def count(self) -> DStream[int]:
        """Live keys each interval, from the snapshots' recorded sizes and the deltas: costs
        what the changed keys cost, not what all keys cost."""
        return handle_for(self._view.count_node())

    def changes(self) -> DStream[tuple[Any, Any]]:
        """``(key, new state)`` of the keys that changed in each interval; ``(key, None)``
        for keys removed by ``update`` or by their timeout."""
        return handle_for(self._view.changes_node())

    @property
    def _view(self) -> TrackView:
        assert isinstance(self._node, TrackView)
        return self._node


def handle_for(node: DStreamCore[Any]) -> DStream[Any]:
    """The handle a user gets for ``node``."""
    return TrackStream(node) if isinstance(node, TrackView) else DStream(node)
