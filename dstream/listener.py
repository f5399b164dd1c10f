"""Streaming listeners: what each batch did and how long it took.

Subclass :class:`StreamingListener` (the same class and method names as
``pyspark.streaming.StreamingListener``) and register it with
``ssc.addStreamingListener``. Callbacks run on one listener thread, in order, never on the
scheduler's thread, so a slow listener cannot delay a batch.

Every batch reports its input record count and three delays, all in milliseconds::

    batch time  submitted      started               ended
        |-----------|-------------|----------------------|
        | scheduling delay        | processing delay     |
        |<------------------ total delay --------------->|

(the scheduling delay is measured from the batch time: it includes job generation).
"""

from __future__ import annotations

import logging
import queue
import threading
from dataclasses import dataclass, field
from typing import Any

from dstream.time import Time

__all__ = [
    "BatchInfo",
    "CheckpointInfo",
    "JavaMap",
    "OutputOperationInfo",
    "ReceiverInfo",
    "StreamInputInfo",
    "StreamingListener",
    "StreamingListenerBatchCompleted",
    "StreamingListenerBatchStarted",
    "StreamingListenerBatchSubmitted",
    "StreamingListenerOutputOperationCompleted",
    "StreamingListenerOutputOperationStarted",
    "StreamingListenerReceiverError",
    "StreamingListenerReceiverStarted",
    "StreamingListenerReceiverStopped",
    "StreamingListenerStreamingStarted",
    "TentativeOutputInfo",
]

log = logging.getLogger(__name__)


class JavaMap(dict[Any, Any]):
    """A dict that also answers the ``java.util.Map`` calls listener code written for
    pyspark.streaming makes on what Py4J hands it (``keySet()``, ``get(k)``, ``size()``...)."""

    def keySet(self) -> set[Any]:
        return set(self)

    def size(self) -> int:
        return len(self)

    def isEmpty(self) -> bool:
        return not self

    def containsKey(self, key: Any) -> bool:
        return key in self


class _JavaLong(int):
    """An int that can also be called: Spark's case-class fields read through Py4J are
    methods (``info.numRecords()``), and some listener code reads them as attributes."""

    def __call__(self) -> int:
        return int(self)


def _or_minus_one(value: int | None) -> int:
    """Spark's Java listener API reports an unknown time or delay as -1."""
    return -1 if value is None else value


@dataclass(frozen=True)
class OutputOperationInfo:
    """One output operation of one batch: ``label`` (``"foreachRDD at app.py:12"``), when it
    started and ended (epoch ms, None until then) and why it failed (None if it did not).
    The camelCase methods are those of Spark's ``OutputOperationInfo``."""

    batch_time: Time
    index: int
    label: str
    start_ms: int | None = None
    end_ms: int | None = None
    failure: str | None = None
    attempts: int = 0  # runs of the output so far (more than 1: it failed and was retried)

    @property
    def duration_ms(self) -> int | None:
        if self.start_ms is None or self.end_ms is None:
            return None
        return self.end_ms - self.start_ms

    # pyspark.streaming's (Java) accessors
    def batchTime(self) -> Time:
        return self.batch_time

    def id(self) -> int:
        return self.index

    def name(self) -> str:
        return self.label

    def description(self) -> str:
        return self.label

    def startTime(self) -> int:
        return _or_minus_one(self.start_ms)

    def endTime(self) -> int:
        return _or_minus_one(self.end_ms)

    def duration(self) -> int:
        return _or_minus_one(self.duration_ms)

    def failureReason(self) -> str | None:
        return self.failure


@dataclass(frozen=True)
class StreamInputInfo:
    """What one input stream read for one batch (as Spark's ``StreamInputInfo``): its record
    count and metadata; a file stream's metadata has ``files`` (the paths it read) and
    ``Description`` (those paths, one per line)."""

    input_stream_id: int
    num_records: int
    metadata_: dict[str, Any] = field(default_factory=dict)

    def inputStreamId(self) -> int:
        return self.input_stream_id

    @property
    def numRecords(self) -> _JavaLong:
        return _JavaLong(self.num_records)

    def metadata(self) -> JavaMap:
        return JavaMap(self.metadata_)

    def metadataDescription(self) -> str:
        return str(self.metadata_.get("Description", ""))


@dataclass(frozen=True)
class BatchInfo:
    """One batch: its time, when it was submitted, started and ended (epoch ms; None until
    then), the records each input stream read and its output operations. The delays are in
    milliseconds (see the module docstring). The camelCase methods are those of Spark's
    ``BatchInfo`` as PySpark's listeners see it, with -1 for a time not known yet."""

    batch_time: Time
    submission_ms: int
    processing_start_ms: int | None = None
    processing_end_ms: int | None = None
    input_records: dict[int, int] = field(default_factory=dict)
    output_operations: tuple[OutputOperationInfo, ...] = ()
    input_metadata: dict[int, dict[str, Any]] = field(default_factory=dict)
    # Intervals that were due and not generated yet when this one was submitted: the engine
    # generates at most settings.max_backlog intervals ahead of the ones completed.
    backlog: int = 0
    # Wall-clock ms from the first job's start to the last job's end (None until the batch
    # completes): what backpressure and the elastic policy weigh. Under the system clock it
    # is about the processing delay; under a ManualClock, which stands still while jobs
    # run, it is the only real measure of the work.
    work_ms: int | None = None
    # Records set aside by this interval's tasks under bad_records="quarantine".
    quarantined: int = 0

    @property
    def num_records(self) -> int:
        return sum(self.input_records.values())

    @property
    def scheduling_delay_ms(self) -> int | None:
        if self.processing_start_ms is None:
            return None
        return self.processing_start_ms - self.batch_time.ms

    @property
    def processing_delay_ms(self) -> int | None:
        if self.processing_start_ms is None or self.processing_end_ms is None:
            return None
        return self.processing_end_ms - self.processing_start_ms

    @property
    def total_delay_ms(self) -> int | None:
        if self.processing_end_ms is None:
            return None
        return self.processing_end_ms - self.batch_time.ms

    @property
    def failed(self) -> bool:
        return any(op.failure is not None for op in self.output_operations)

    # pyspark.streaming's (Java) accessors
    def batchTime(self) -> Time:
        return self.batch_time

    def submissionTime(self) -> int:
        return self.submission_ms

    def processingStartTime(self) -> int:
        return _or_minus_one(self.processing_start_ms)

    def processingEndTime(self) -> int:
        return _or_minus_one(self.processing_end_ms)

    def schedulingDelay(self) -> int:
        return _or_minus_one(self.scheduling_delay_ms)

    def processingDelay(self) -> int:
        return _or_minus_one(self.processing_delay_ms)

    def totalDelay(self) -> int:
        return _or_minus_one(self.total_delay_ms)

    def numRecords(self) -> int:
        return self.num_records

    def streamIdToInputInfo(self) -> JavaMap:
        return JavaMap(
            (sid, StreamInputInfo(sid, n, self.input_metadata.get(sid, {})))
            for sid, n in self.input_records.items()
        )

    def outputOperationInfos(self) -> JavaMap:
        return JavaMap((op.index, op) for op in self.output_operations)


@dataclass(frozen=True)
class CheckpointInfo:
    """One state checkpoint, written or failed: the state stream (``label``, and the name
    given with ``setName``), the interval whose state it holds, how long the write took, how
    many attempts were made, and for a failure its error and how many of the stream's
    checkpoints in a row have failed (the engine halts at ``max_checkpoint_failures``)."""

    label: str
    name: str | None
    batch_time: Time
    seconds: float | None = None
    attempts: int = 1
    error: str | None = None
    consecutive_failures: int = 0


@dataclass(frozen=True)
class TentativeOutputInfo:
    """A tentative result: the interval, the output operation (its index and label), its
    fidelity (PPA's Eq. 4: the rate-weighted share of the interval's input that reached it,
    0-1), the state partitions it was computed without (by state, read back from their last
    checkpoint or empty), when it was delivered (epoch ms) and how long after the interval
    ended (ms of the streaming clock)."""

    batch_time: Time
    output_index: int
    label: str
    fidelity: float
    lost_partitions: dict[str, list[int]]
    delivered_ms: int
    delay_ms: int
    priority: int = 1


@dataclass(frozen=True)
class ReceiverInfo:
    """A receiver (``socketTextStream``'s) as Spark's ``ReceiverInfo`` describes it: its input
    stream's id, its name (``SocketReceiver-<stream id>``), whether it is connected and
    receiving, where it runs (the driver's host: dstream's receivers run on the driver), and
    its last error: the message, the error itself (empty for a server that closed the
    stream), and when it happened (epoch ms on the streaming clock, -1 if never)."""

    stream_id: int
    receiver_name: str
    is_active: bool
    host: str
    executor_id: str = "driver"
    last_error_message: str = ""
    last_error: str = ""
    last_error_time_ms: int = -1

    # Spark's (Java) accessors
    def streamId(self) -> int:
        return self.stream_id

    def name(self) -> str:
        return self.receiver_name

    def active(self) -> bool:
        return self.is_active

    def location(self) -> str:
        return self.host

    def executorId(self) -> str:
        return self.executor_id

    def lastErrorMessage(self) -> str:
        return self.last_error_message

    def lastError(self) -> str:
        return self.last_error

    def lastErrorTime(self) -> int:
        return self.last_error_time_ms


@dataclass(frozen=True)
class _ReceiverEvent:
    receiver_info: ReceiverInfo

    def receiverInfo(self) -> ReceiverInfo:
        return self.receiver_info


class StreamingListenerReceiverStarted(_ReceiverEvent):
    """The receiver connected and is receiving (again, after a restart)."""


class StreamingListenerReceiverError(_ReceiverEvent):
    """The receiver lost its connection or could not connect; it restarts after
    ``StreamingSettings.receiver_restart_delay``."""


class StreamingListenerReceiverStopped(_ReceiverEvent):
    """The receiver stopped for good (``ssc.stop()``)."""


@dataclass(frozen=True)
class StreamingListenerStreamingStarted:
    time_ms: int

    def time(self) -> int:
        return self.time_ms


@dataclass(frozen=True)
class _BatchEvent:
    batch_info: BatchInfo

    def batchInfo(self) -> BatchInfo:
        return self.batch_info


class StreamingListenerBatchSubmitted(_BatchEvent):
    pass


class StreamingListenerBatchStarted(_BatchEvent):
    pass


class StreamingListenerBatchCompleted(_BatchEvent):
    pass


@dataclass(frozen=True)
class _OutputEvent:
    output_operation_info: OutputOperationInfo

    def outputOperationInfo(self) -> OutputOperationInfo:
        return self.output_operation_info


class StreamingListenerOutputOperationStarted(_OutputEvent):
    pass


class StreamingListenerOutputOperationCompleted(_OutputEvent):
    pass


class StreamingListener:
    """Override the callbacks you need; the defaults do nothing."""

    def onStreamingStarted(self, streamingStarted: Any) -> None:
        """The StreamingContext started."""

    def onReceiverStarted(self, receiverStarted: Any) -> None:
        """A receiver connected (:class:`StreamingListenerReceiverStarted`; its
        ``receiverInfo()`` is a :class:`ReceiverInfo`)."""

    def onReceiverError(self, receiverError: Any) -> None:
        """A receiver lost its connection or could not connect, and will restart
        (:class:`StreamingListenerReceiverError`)."""

    def onReceiverStopped(self, receiverStopped: Any) -> None:
        """A receiver stopped with the context (:class:`StreamingListenerReceiverStopped`)."""

    def onBatchSubmitted(self, batchSubmitted: Any) -> None:
        """A batch's jobs were generated and submitted."""

    def onBatchStarted(self, batchStarted: Any) -> None:
        """The first job of a batch started."""

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        """Every job of a batch finished (some may have failed: see ``batchInfo().failed``)."""

    def onOutputOperationStarted(self, outputOperationStarted: Any) -> None:
        """One output operation's job of a batch started."""

    def onOutputOperationCompleted(self, outputOperationCompleted: Any) -> None:
        """One output operation's job of a batch finished."""

    # dstream's own (PySpark's listener has no such callbacks)
    def onCheckpointCompleted(self, checkpoint: CheckpointInfo) -> None:
        """A state stream's checkpoint was written (and recorded in the metadata journal)."""

    def onCheckpointFailed(self, checkpoint: CheckpointInfo) -> None:
        """Every attempt to write a state stream's checkpoint failed."""

    def onTentativeOutput(self, tentative: TentativeOutputInfo) -> None:
        """An output gave a tentative result of an interval while an executor loss was
        being recovered (``StreamingSettings(tentative_outputs=True)``); its exact result
        follows as usual."""


class ListenerBus:
    """Delivers events to listeners on one thread, in the order they were posted."""

    def __init__(self) -> None:
        self._listeners: list[StreamingListener] = []
        self._queue: queue.Queue[tuple[str, Any] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def add(self, listener: StreamingListener, *, first: bool = False) -> None:
        """``first``: before every listener added so far (the engine's own controllers,
        whose effects the progress records and users' listeners then see)."""
        with self._lock:
            if first:
                self._listeners.insert(0, listener)
            else:
                self._listeners.append(listener)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="dstream-listener-bus", daemon=True)
        self._thread.start()

    def post(self, callback: str, event: Any) -> None:
        self._queue.put((callback, event))

    def stop(self) -> None:
        """Deliver what is queued, then stop."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def wait_until_empty(self, timeout_s: float | None = None) -> None:
        """Block until every event posted so far has been delivered (for tests)."""
        done = threading.Event()
        self._queue.put(("__marker__", done))
        done.wait(timeout_s)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            callback, event = item
            if callback == "__marker__":
                event.set()
                continue
            with self._lock:
                listeners = list(self._listeners)
            for listener in listeners:
                try:
                    getattr(listener, callback)(event)
                except Exception:
                    log.exception("streaming listener %r failed in %s", listener, callback)
