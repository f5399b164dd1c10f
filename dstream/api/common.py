"""What every stream offers, whatever its family: naming, persistence, checkpoint intervals,
remembering RDDs, slicing out past intervals, and the helpers the operator families share
(validating a user function, building a stream from an RDD function).

The DStream a user holds is a handle over a node of the program's graph (a
:class:`~dstream.streams.base.DStreamCore`): each method checks its arguments, builds the node
that does the work and returns a handle over it. The engine sees nodes only."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from dstream.errors import ContextStateError
from dstream.functions import UserFunction, call_site, check_callable
from dstream.streams.base import DStreamCore
from dstream.streams.keyed_state import ApproximatedState
from dstream.streams.state_base import StateStream
from dstream.streams.transformed import TransformedDStream
from dstream.time import Time, to_duration, to_time

if TYPE_CHECKING:
    from pyspark import RDD, StorageLevel

    from dstream.context import StreamingContext
    from dstream.dstream import DStream

T = TypeVar("T")

__all__ = ["CommonOps", "node_of"]


def node_of(stream: object) -> DStreamCore[Any] | None:
    """The graph node behind a user's stream (None: ``stream`` is not a DStream): the
    engine's side of a handle, the inverse of :func:`dstream.dstream.handle_for`."""
    return stream._node if isinstance(stream, CommonOps) else None


class CommonOps(Generic[T]):
    __slots__ = ("_node",)

    def __init__(self, node: DStreamCore[Any]) -> None:
        self._node = node

    def _wrap(self, node: DStreamCore[Any]) -> DStream[Any]:
        """A handle over ``node`` (the composed class, :class:`dstream.dstream.DStream`,
        says which)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"DStream({self._node.label})"

    def context(self) -> StreamingContext:
        """The StreamingContext this stream belongs to."""
        return cast("StreamingContext", self._node.graph.context)

    def setName(self, name: str) -> DStream[T]:
        """Name this stream, so that a restarted driver running changed code can find its
        state (``StreamingContext.getOrCreate(..., rebuildGraph=True)``)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"setName() needs a non-empty string, got {name!r}")
        self._node.set_user_name(name)
        return self  # type: ignore[return-value]

    def checkpoint(self, interval: object) -> DStream[T]:
        """Checkpoint this stream's RDDs every ``interval`` (a multiple of its slide).

        On the stream a window or state operator returned, this sets the interval of the
        state behind it (its lineage is what checkpoints cut)."""
        node = self._node
        node.graph.check_can_add("checkpoint")
        target = node.checkpoint_target or node
        duration = to_duration(interval, "checkpoint interval")
        if not duration.is_multiple_of(target.slide_duration):
            raise ValueError(
                f"checkpoint interval {duration} of {target.label} must be a multiple of its "
                f"slide {target.slide_duration}"
            )
        target.set_checkpoint_interval(duration)
        return self  # type: ignore[return-value]

    def recoveryStrategy(
        self, kind: str, every: object = None, copies: int | None = None
    ) -> DStream[T]:
        """How the state behind this stream survives a lost executor or driver (StreamScope's
        strategies, per stream; see :mod:`dstream.recovery`):

        * ``"checkpoint"`` (the default): state files every ``every`` (the checkpoint
          interval), lineage recomputed from the last one.
        * ``"replay"`` (windows with an inverse only): no checkpoint files; the window is
          rebuilt from its per-interval inputs every ``every`` (default: the window), after a
          loss and after a restart.
        * ``"replicate"``: ``copies`` (default 2) of each interval's state in executor memory,
          a loss reads a copy; checkpoints every ``every`` (default: ten times the usual
          interval) for lineage and restarts.
        * ``"auto"``: checkpoint, then replay if the first checkpoint measured costs more than
          5 % of the time between checkpoints and the state can replay.
        """
        node = self._node
        node.graph.check_can_add("recoveryStrategy")
        target = node.checkpoint_target or node
        if not isinstance(target, StateStream):
            raise ValueError(
                f"recoveryStrategy({kind!r}) on {target.label}, which keeps no state between "
                "intervals (lineage alone recovers it); call it on the stream a window with an "
                "inverse, updateStateByKey or track returned"
            )
        target.set_strategy(kind, every, copies)
        return self  # type: ignore[return-value]

    def approximateRecovery(
        self, maxDivergence: float, divergence: str | Callable[[Any, Any], float] = "l1"
    ) -> DStream[T]:
        """Recover the ``updateStateByKey`` or ``track`` state behind this stream from
        copies, within a bound, instead of recomputing it (AF-Stream's approximate fault
        tolerance; see :mod:`dstream.tasks.approx_state`).

        Each partition copies only its changed keys, and only once they have drifted from
        its last copy by more than its share of ``maxDivergence`` (``divergence``: ``"l1"``,
        the sum of absolute differences of numbers or of tuples, lists and dicts of them, or
        ``fn(state at the copy or None, state now or None) -> float``). A lost partition is
        restored from its copy plus the current interval: no interval is recomputed. However
        many failures, the state's total divergence from the exact one stays at most
        ``maxDivergence``; ``0`` makes every restore exact. Restores are journaled, so a
        restarted driver reproduces them. A ``track`` state's copy also records, each
        interval, which keys had events (their key bytes: a restored key times out when the
        exact one would); a timeout's removal is a change like any (``fn(state, None)``).
        Needs ``pipelining_depth=1`` and a fixed partition count; windows with an inverse
        are refused (each interval changes their every key,
        so a copy of the changed keys would be the whole state)."""
        node = self._node
        node.graph.check_can_add("approximateRecovery")
        target = node.checkpoint_target or node
        if not isinstance(target, ApproximatedState):
            if isinstance(target, StateStream):
                raise ValueError(
                    f"approximateRecovery() on {target.label}: a window with an inverse "
                    "changes every key's value each interval (an interval enters and one "
                    "leaves), so a copy of its changed keys is the whole state, and its error "
                    'leaves with the window anyway: use recoveryStrategy("replay")'
                )
            raise ValueError(
                f"approximateRecovery() on {target.label}, which keeps no state between "
                "intervals; call it on the stream updateStateByKey or track returned"
            )
        target.set_approximate(maxDivergence, divergence)
        return self  # type: ignore[return-value]

    def rescale(self, numPartitions: int) -> Time | None:
        """Give the keyed state behind this stream (``updateStateByKey``, a window with an
        inverse) ``numPartitions`` partitions from the next interval on, without losing,
        doubling or recounting a record: before ``start()`` it is simply the count it
        starts with; while running (from the program or the live shell) the interval it
        takes effect at is returned. From ``n`` to ``m`` partitions, a key can only move to
        a new partition that draws on ``n / gcd(n, m)`` old ones: where that is at most two
        (doubling, halving, 4 -> 6, 2 -> 3) the state moves without a shuffle, each new
        partition reading its old ones where they are cached; other counts (6 -> 4, 3 -> 4)
        shuffle an updateStateByKey state once, and a window's new partitions read every
        old one. The counts are journaled: a restarted driver replays each interval at the
        count it had."""
        target = self._node.checkpoint_target or self._node
        if not isinstance(target, StateStream):
            raise ValueError(
                f"rescale({numPartitions!r}) on {target.label}, which keeps no state between "
                "intervals; call it on the stream updateStateByKey or a window with an inverse "
                "returned (a stateless "
                "stream's partitions are set per operator: numPartitions=, repartition())"
            )
        return target.rescale(numPartitions)

    def cache(self) -> DStream[T]:
        """Keep each interval's RDD in memory (MEMORY_ONLY), as ``persist()`` does."""
        from pyspark import StorageLevel

        return self.persist(StorageLevel.MEMORY_ONLY)

    def persist(self, storageLevel: StorageLevel) -> DStream[T]:
        """Persist each interval's RDD at ``storageLevel``."""
        from pyspark import StorageLevel

        if not isinstance(storageLevel, StorageLevel):
            raise TypeError(
                f"persist() needs a pyspark.StorageLevel, got {storageLevel!r}; "
                "e.g. persist(StorageLevel.MEMORY_AND_DISK)"
            )
        self._node.graph.check_can_add("persist")
        self._node.set_storage_level(storageLevel)
        return self  # type: ignore[return-value]

    def remember(self, duration: object) -> DStream[T]:
        """Keep this stream's RDDs for at least ``duration`` (for ``slice`` and shell queries)."""
        self._node.graph.check_can_add("remember")
        self._node.remember(to_duration(duration, "remember duration"))
        return self  # type: ignore[return-value]

    def slice(self, begin: object, end: object) -> list[RDD[T]]:
        """The RDDs of the intervals from ``begin`` to ``end``, both included, as PySpark's:
        each bound is moved back onto the stream's grid of intervals, and an end before the
        begin gives an empty list.

        ``begin``/``end`` are :class:`dstream.Time`, datetimes (naive: local time) or epoch
        seconds (and on a user's stream what a person types, see ``at``). Only intervals
        this stream still remembers (see ``remember``) are returned.
        """
        node = self._node
        b, e = self._when(begin, "slice begin"), self._when(end, "slice end")
        if node.zero_time is None:
            raise ContextStateError(
                f"slice() on {node.label} before ssc.start(): no interval exists yet"
            )
        slide, zero = node.slide_duration, node.zero_time
        times = node.remembered_between(b.floor(slide, zero), e.floor(slide, zero))
        return [self._slice_view(t) for t in times]

    def _when(self, value: object, what: str) -> Time:
        return to_time(value, what)

    def _slice_view(self, time: Time) -> RDD[T]:
        rdd = self._node.remembered_rdd(time)
        if rdd is None:  # forgotten since slice() listed it
            raise KeyError(time)
        return rdd

    # ---- helpers shared by every family ---------------------------------------------------
    def _user(
        self, operator_name: str, fn: object, argument: str = "func", *, driver: bool = False
    ) -> UserFunction:
        check_callable(fn, operator_name, argument)
        assert callable(fn)
        return UserFunction(operator_name, call_site(), fn, "driver" if driver else "executor")

    def _rdd_op(
        self,
        name: str,
        fn: Callable[[RDD[Any]], RDD[Any]],
        user_functions: Iterable[UserFunction] = (),
    ) -> DStream[Any]:
        """A stream whose RDD of each interval is ``fn(parent RDD of that interval)``."""
        return self._wrap(
            TransformedDStream(
                [self._node],
                lambda _t, rdds: fn(rdds[0]),
                name=name,
                user_functions=user_functions,
            )
        )

    def _num_partitions(self, numPartitions: int | None, operator_name: str) -> int:
        if numPartitions is None:
            return int(self._node.graph.sc.defaultParallelism)
        if isinstance(numPartitions, bool) or not isinstance(numPartitions, int):
            raise TypeError(
                f"{operator_name}() numPartitions must be an int, got {numPartitions!r}"
            )
        if numPartitions < 1:
            raise ValueError(f"{operator_name}() numPartitions {numPartitions} must be at least 1")
        return numPartitions

    def _node_of(self, other: object, operator_name: str) -> DStreamCore[Any]:
        """The node behind ``other``, a stream passed to ``operator_name``."""
        if not isinstance(other, CommonOps):
            raise TypeError(
                f"{operator_name}() needs another DStream, got {type(other).__name__} {other!r}"
            )
        return other._node
