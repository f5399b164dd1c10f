"""``queueStream``: a fixed queue of RDDs (or lists), one (or all) per interval. For tests and
demos; a queue is not durable input, so it cannot be recovered after a driver failure."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from dstream.sources.base import InputDStream
from dstream.time import Time

if TYPE_CHECKING:
    from pyspark import RDD

    from dstream.streams.graph import DStreamGraph

__all__ = ["QueueInputDStream"]


class QueueInputDStream(InputDStream):
    def __init__(
        self,
        graph: DStreamGraph,
        items: Iterable[RDD[Any] | Iterable[Any]],
        one_at_a_time: bool,
        default: RDD[Any] | Iterable[Any] | None,
    ) -> None:
        super().__init__(graph, name="queueStream")
        # Each entry carries its record count when known (a list) so no task has to count.
        self._queue.extend(self._as_rdd(i) for i in items)
        self._default: tuple[RDD[Any], int | None] | None = (
            None if default is None else self._as_rdd(default)
        )
        self._one_at_a_time = one_at_a_time
        self._restored = False

    # The queued RDDs exist only in the driver that made them.
    _transient: ClassVar[tuple[str, ...]] = ("_queue", "_default", "_queue_lock", "_restored")

    def _init_transient(self) -> None:
        super()._init_transient()
        self._queue: deque[tuple[RDD[Any], int | None]] = deque()
        self._default = None
        self._queue_lock = threading.Lock()
        # Set when this stream came back from a metadata record: its RDDs are gone.
        self._restored = True

    def _as_rdd(self, item: RDD[Any] | Iterable[Any]) -> tuple[RDD[Any], int | None]:
        from pyspark import RDD

        if isinstance(item, RDD):
            return item, None
        if isinstance(item, str | bytes) or not isinstance(item, Iterable):
            raise TypeError(
                f"queueStream() takes RDDs or lists of records, got {type(item).__name__} "
                f"{item!r}; wrap single records in a list, e.g. [[1, 2], [3]]"
            )
        records = list(item)
        return self._graph.sc.parallelize(records), len(records)

    def validate(self) -> None:
        if getattr(self, "_restored", False) and self._graph.runtime.restored_from is not None:
            raise ValueError(
                f"{self.label} cannot be recovered after a driver failure: its RDDs lived in "
                "the old driver. Use a durable source (textFileStream, rateStream) for a "
                "program that must survive a driver restart"
            )

    def _read(self, time: Time) -> RDD[Any] | None:
        with self._queue_lock:
            if self._one_at_a_time and self._queue:
                taken = [self._queue.popleft()]
            else:
                taken = list(self._queue)
                self._queue.clear()
        if not taken:
            if self._default is not None:
                taken = [self._default]
            else:
                self.set_record_count(time, 0)
                return self._graph.sc.emptyRDD()
        counts = [n for _, n in taken]
        if all(n is not None for n in counts):
            self.set_record_count(time, sum(n for n in counts if n is not None))
        rdds = [r for r, _ in taken]
        return rdds[0] if len(rdds) == 1 else self._graph.sc.union(rdds)
