"""What every stream offers, whatever its family: naming, persistence, checkpoint intervals,
remembering RDDs, slicing out past intervals, and the helpers the operator families share
(validating a user function, building a stream from an RDD function)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from dstream.errors import ContextStateError
from dstream.functions import UserFunction, call_site, check_callable
from dstream.streams.base import DStreamCore
from dstream.time import Time, to_duration, to_time

if TYPE_CHECKING:
    from pyspark import RDD, StorageLevel

    from dstream.context import StreamingContext
    from dstream.dstream import DStream

T = TypeVar("T")

__all__ = ["CommonOps"]


class CommonOps(DStreamCore[T]):
    def context(self) -> StreamingContext:
        """The StreamingContext this stream belongs to."""
        return cast("StreamingContext", self._graph.context)

    def setName(self, name: str) -> DStreamCore[T]:
        """Name this stream, so that a restarted driver running changed code can find its
        state (``StreamingContext.getOrCreate(..., rebuildGraph=True)``)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"setName() needs a non-empty string, got {name!r}")
        self._user_name = name
        return self

    def checkpoint(self, interval: object) -> DStreamCore[T]:
        """Checkpoint this stream's RDDs every ``interval`` (a multiple of its slide).

        On the stream a window or state operator returned, this sets the interval of the
        state behind it (its lineage is what checkpoints cut)."""
        self._graph.check_can_add("checkpoint")
        target = self._checkpoint_target
        if target is not None:
            cast("CommonOps[Any]", target).checkpoint(interval)
            return self
        duration = to_duration(interval, "checkpoint interval")
        if not duration.is_multiple_of(self._slide_duration):
            raise ValueError(
                f"checkpoint interval {duration} of {self._label} must be a multiple of its "
                f"slide {self._slide_duration}"
            )
        self._checkpoint_interval = duration
        return self

    def recoveryStrategy(
        self, kind: str, every: object = None, copies: int | None = None
    ) -> DStreamCore[T]:
        """How the state behind this stream survives a lost executor or driver (StreamScope's
        strategies, per stream; see :mod:`dstream.streams.strategy`):

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
        self._graph.check_can_add("recoveryStrategy")
        target = self._checkpoint_target
        if target is not None:
            cast("CommonOps[Any]", target).recoveryStrategy(kind, every, copies)
            return self
        from dstream.streams.state_base import StateStream

        if not isinstance(self, StateStream):
            raise ValueError(
                f"recoveryStrategy({kind!r}) on {self._label}, which keeps no state between "
                "intervals (lineage alone recovers it); call it on the stream a window with an "
                "inverse, updateStateByKey or track returned"
            )
        self._set_strategy(kind, every, copies)
        return self

    def rescale(self, numPartitions: int) -> Time | None:
        """Give the keyed state behind this stream (``updateStateByKey``, a window with an
        inverse) ``numPartitions`` partitions from the next interval on, without losing,
        doubling or recounting a record: before ``start()`` it is simply the count it
        starts with; while running (from the program or the live shell) the interval it
        takes effect at is returned. Doubling or halving moves the state without a shuffle
        (each new partition reads one or two old ones where they are cached); other counts
        shuffle an updateStateByKey state once (a window's new partitions read every old
        one). The counts are journaled: a restarted driver replays each interval at the
        count it had."""
        target = self._checkpoint_target
        if target is not None:
            return cast("CommonOps[Any]", target).rescale(numPartitions)
        from dstream.streams.state_base import StateStream

        if not isinstance(self, StateStream):
            raise ValueError(
                f"rescale({numPartitions!r}) on {self._label}, which keeps no state between "
                "intervals; call it on the stream updateStateByKey or a window with an inverse "
                "returned (a stateless "
                "stream's partitions are set per operator: numPartitions=, repartition())"
            )
        return self._rescale(numPartitions)

    def cache(self) -> DStreamCore[T]:
        """Keep each interval's RDD in memory (MEMORY_ONLY), as ``persist()`` does."""
        from pyspark import StorageLevel

        return self.persist(StorageLevel.MEMORY_ONLY)

    def persist(self, storageLevel: StorageLevel) -> DStreamCore[T]:
        """Persist each interval's RDD at ``storageLevel``."""
        from pyspark import StorageLevel

        if not isinstance(storageLevel, StorageLevel):
            raise TypeError(
                f"persist() needs a pyspark.StorageLevel, got {storageLevel!r}; "
                "e.g. persist(StorageLevel.MEMORY_AND_DISK)"
            )
        self._graph.check_can_add("persist")
        self._storage_level = storageLevel
        return self

    def remember(self, duration: object) -> DStreamCore[T]:
        """Keep this stream's RDDs for at least ``duration`` (for ``slice`` and shell queries)."""
        self._graph.check_can_add("remember")
        self._remember(to_duration(duration, "remember duration"))
        return self

    def slice(self, begin: object, end: object) -> list[RDD[T]]:
        """The RDDs of the intervals from ``begin`` to ``end``, both included, as PySpark's:
        each bound is moved back onto the stream's grid of intervals, and an end before the
        begin gives an empty list.

        ``begin``/``end`` are :class:`dstream.Time`, datetimes (naive: local time) or epoch
        seconds (and on a user's stream what a person types, see ``at``). Only intervals
        this stream still remembers (see ``remember``) are returned.
        """
        b, e = self._when(begin, "slice begin"), self._when(end, "slice end")
        if self._zero_time is None:
            raise ContextStateError(
                f"slice() on {self._label} before ssc.start(): no interval exists yet"
            )
        slide, zero = self._slide_duration, self._zero_time
        first, last = b.floor(slide, zero), e.floor(slide, zero)
        result = []
        with self._lock:
            t = first
            while t <= last:
                if t in self._generated:
                    result.append(t)
                t = t + slide
        return [self._slice_view(t) for t in result]

    def _when(self, value: object, what: str) -> Time:
        return to_time(value, what)

    def _slice_view(self, time: Time) -> RDD[T]:
        return self._generated[time]

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
        from dstream.streams.transformed import TransformedDStream

        return TransformedDStream(
            [self],  # type: ignore[list-item]
            lambda _t, rdds: fn(rdds[0]),
            name=name,
            user_functions=user_functions,
        )

    def _num_partitions(self, numPartitions: int | None, operator_name: str) -> int:
        if numPartitions is None:
            return int(self._graph.sc.defaultParallelism)
        if isinstance(numPartitions, bool) or not isinstance(numPartitions, int):
            raise TypeError(
                f"{operator_name}() numPartitions must be an int, got {numPartitions!r}"
            )
        if numPartitions < 1:
            raise ValueError(f"{operator_name}() numPartitions {numPartitions} must be at least 1")
        return numPartitions

    def _check_stream(self, other: object, operator_name: str) -> None:
        if not isinstance(other, DStreamCore):
            raise TypeError(
                f"{operator_name}() needs another DStream, got {type(other).__name__} {other!r}"
            )
