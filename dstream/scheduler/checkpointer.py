"""Runs state checkpoints in the background, one at a time, off the path of every interval.

A state stream asks for a checkpoint when an interval that is due has completed; the
checkpointer's thread runs the write job in its own Spark job group, then tells the stream
(which starts rebuilding from it) and the context (which records it in the metadata journal
before older checkpoints may be deleted). A stream whose previous checkpoint is still being
written skips this one rather than queueing behind itself.

A write that fails is tried again (``checkpoint_retries`` times); a checkpoint that still
failed is reported (the listener's ``onCheckpointFailed``), and after
``max_checkpoint_failures`` of a stream's checkpoints in a row failed the engine halts: its
lineage would otherwise grow without bound. The checkpointer only reports; the scheduler's
loop decides, from the events the callbacks post.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dstream.scheduler.jobs import cancel_running_jobs
from dstream.time import Time

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext

    from dstream.streams.state_base import StateStream

__all__ = ["Checkpointer"]

log = logging.getLogger(__name__)


class Checkpointer:
    def __init__(
        self,
        sc: SparkContext,
        group_prefix: str,
        on_written: Callable[[StateStream, Time, float], None],
        on_failed: Callable[[StateStream, Time, BaseException, int], None],
        retries: int = 0,
    ) -> None:
        self._sc = sc
        self._group_prefix = group_prefix
        self._on_written = on_written
        self._on_failed = on_failed
        self._retries = retries
        self._queue: queue.Queue[tuple[StateStream, Time, RDD[Any]] | None] = queue.Queue()
        self._in_flight: set[int] = set()
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None
        self._current_group: str | None = None
        self._stopping = False
        # The last checkpoints written, (stream id, time, seconds): bounded, a program runs
        # for months.
        self.completed: deque[tuple[int, Time, float]] = deque(maxlen=100)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="dstream-checkpointer", daemon=True)
        self._thread.start()

    def submit(self, stream: StateStream, time: Time, rdd: RDD[Any]) -> bool:
        with self._lock:
            if stream.id in self._in_flight or self._thread is None:
                return False
            self._in_flight.add(stream.id)
        self._queue.put((stream, time, rdd))
        return True

    def wait_idle(self, timeout_s: float | None = None) -> bool:
        """Block until no checkpoint is queued or running (tests, graceful stop)."""
        with self._lock:
            return self._lock.wait_for(lambda: not self._in_flight, timeout_s)

    def stop(self, graceful: bool) -> None:
        if self._thread is None:
            return
        self._stopping = True
        if graceful:
            self.wait_idle(120)
        else:
            group = self._current_group
            if group is not None:
                cancel_running_jobs(self._sc, group)
        self._queue.put(None)
        self._thread.join(timeout=120)
        self._thread = None

    def _run(self) -> None:
        import time as _time

        while True:
            item = self._queue.get()
            if item is None:
                return
            stream, time, rdd = item
            began = _time.perf_counter()
            try:
                self._current_group = f"{self._group_prefix}-checkpoint-{stream.id}-{time.ms}"
                self._sc.setJobGroup(
                    self._current_group, f"dstream checkpoint of {stream.label} at {time}"
                )
                attempts = self._write(stream, time, rdd)
                if attempts is not None:
                    seconds = _time.perf_counter() - began
                    self.completed.append((stream.id, time, seconds))
                    self._on_written(stream, time, seconds)
            finally:
                self._current_group = None
                with self._lock:
                    self._in_flight.discard(stream.id)
                    self._lock.notify_all()

    def _write(self, stream: StateStream, time: Time, rdd: RDD[Any]) -> int | None:
        """Write, retrying; the number of attempts it took, or None if it failed (reported)."""
        for attempt in range(1, self._retries + 2):
            try:
                stream.checkpoint_now(time, rdd)
                return attempt
            except Exception as exc:
                if self._stopping:
                    log.info("checkpoint of %s at %s cancelled by stop()", stream.label, time)
                    return None
                if attempt <= self._retries:
                    log.warning(
                        "checkpoint of %s at %s failed (attempt %d of %d), retrying: %s",
                        stream.label,
                        time,
                        attempt,
                        self._retries + 1,
                        exc,
                    )
                    continue
                log.error("checkpoint of %s at %s failed: %s", stream.label, time, exc)
                self._on_failed(stream, time, exc, attempt)
        return None
