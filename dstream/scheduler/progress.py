"""Progress records, one per completed batch, shaped like Structured Streaming's
(``query.lastProgress``): what a person or a script reads to see how a stream is doing.

``ssc.lastProgress`` / ``ssc.recentProgress`` return JSON-serialisable dicts::

    {"id": "dstream-app-20261126-0", "name": "wordcount", "batchTime": "2026-11-26 17:16:57.000",
     "timestamp": "2026-11-26T17:16:57.000Z", "batchId": 1795713417000,
     "numInputRows": 2000, "inputRowsPerSecond": 2000.0, "processedRowsPerSecond": 6451.6,
     "durationMs": {"schedulingDelay": 4, "processing": 310, "totalDelay": 314},
     "backlog": 0, "failed": false,
     "sources": [{"description": "textFileStream[/data/in]", "numInputRows": 2000,
                  "inputRowsPerSecond": 2000.0, "files": ["/data/in/a.txt"]}],
     "stateOperators": [{"name": "totals", "operator": "updateStateByKey at app.py:12",
                         "lastCheckpoint": "2026-11-26 17:16:50.000",
                         "lastCheckpointMs": 1795713410000, "lineageDepth": 7,
                         "memoryUsedBytes": 1048576}],
     "outputs": [{"name": "saveAsTextFiles at app.py:14", "durationMs": 120, "attempts": 1,
                  "failure": null}]}

Under ``StreamingSettings(backpressure=True)`` each source also has ``"rateLimit"`` (records
per second it may read next), and under ``elastic=`` the record has ``"executors": {"live":
3, "target": 4}`` (what the cluster manager was last asked for; null before any step).

They are built on the listener thread from what the batch reported, never on the scheduler's.
``ConsoleProgress`` prints one line per batch for interactive runs.
"""

from __future__ import annotations

import sys
import threading
from collections import deque
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

from dstream.listener import BatchInfo, StreamingListener
from dstream.scheduler.coordinator import given_names
from dstream.streams.state_base import StateStream
from dstream.time import human_time

if TYPE_CHECKING:
    from pyspark import SparkContext

    from dstream.scheduler.engine import Engine

__all__ = ["ConsoleProgress", "ProgressTracker", "human_time", "progress_record"]


def _utc(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _rate(rows: int, ms: int | None) -> float:
    return round(rows / (ms / 1000), 1) if ms else 0.0


def progress_record(engine: Engine, info: BatchInfo) -> dict[str, Any]:
    """The progress record of one completed batch."""
    interval_ms = engine.batch_duration.ms
    processing = info.processing_delay_ms
    sources = []
    for source in engine.graph.inputs:
        rows = info.input_records.get(source.id, 0)
        entry: dict[str, Any] = {
            "description": source.description(),
            "numInputRows": rows,
            "inputRowsPerSecond": _rate(rows, interval_ms),
        }
        entry.update({k: v for k, v in info.input_metadata.get(source.id, {}).items()
                      if k != "Description"})  # fmt: skip
        if source.rate_limit is not None:  # backpressure: records/s it may read next
            entry["rateLimit"] = round(source.rate_limit, 1)
        sources.append(entry)
    sizes = _cached_sizes(engine.sc)
    # A state's name is the one setName() gave it or the stream its operator returned, as
    # in the journal (else the operator and where it was called).
    names = given_names(engine.graph.streams)
    states = [
        {**s.progress(info.batch_time, sizes), "name": names.get(s.id, s.label)}
        for s in engine.graph.streams
        if isinstance(s, StateStream)
    ]
    record: dict[str, Any] = {
        "id": engine.job_group_prefix,
        "name": engine.sc.appName,
        "batchTime": human_time(info.batch_time),
        "timestamp": _utc(info.batch_time.ms),
        "batchId": info.batch_time.ms,
        "numInputRows": info.num_records,
        "inputRowsPerSecond": _rate(info.num_records, interval_ms),
        "processedRowsPerSecond": _rate(info.num_records, processing),
        "durationMs": {
            "schedulingDelay": info.scheduling_delay_ms,
            "processing": processing,
            "totalDelay": info.total_delay_ms,
        },
        "backlog": info.backlog,
        "failed": info.failed,
        "quarantinedRecords": info.quarantined,
        "sources": sources,
        "stateOperators": states,
        "outputs": [
            {
                "name": op.label,
                "durationMs": op.duration_ms,
                "attempts": op.attempts,
                "failure": op.failure,
            }
            for op in info.output_operations
        ],
    }
    monitor = engine.monitor
    if engine.settings.elastic is not None and monitor is not None:
        record["executors"] = {"live": len(monitor.live_executors), "target": monitor.target}
    return record


def _cached_sizes(sc: SparkContext) -> dict[int, int]:
    """Bytes in memory of each cached RDD, by RDD id (one call to the driver JVM)."""
    try:
        infos = sc._jsc.sc().getRDDStorageInfo()
        return {int(i.id()): int(i.memSize()) for i in infos}
    except Exception:  # the SparkContext is stopping: no sizes, the record is still useful
        return {}


class ProgressTracker(StreamingListener):
    """Keeps the last ``keep`` progress records of a program."""

    def __init__(self, engine: Engine, keep: int = 100) -> None:
        self._engine = engine
        self._records: deque[dict[str, Any]] = deque(maxlen=keep)
        self._lock = threading.Lock()

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        record = progress_record(self._engine, batchCompleted.batchInfo())
        with self._lock:
            self._records.append(record)

    @property
    def last(self) -> dict[str, Any] | None:
        with self._lock:
            return self._records[-1] if self._records else None

    @property
    def recent(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._records)


class ConsoleProgress(StreamingListener):
    """One line per completed batch, for interactive runs::

    [2026-11-26 17:16:57.000]  2,000 rows  6,452 rows/s  processing 310 ms  delay 314 ms
    """

    def __init__(self, out: TextIO | None = None) -> None:
        self._out = out or sys.stdout

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        info = batchCompleted.batchInfo()
        rate = _rate(info.num_records, info.processing_delay_ms)
        line = (
            f"[{human_time(info.batch_time)}]  {info.num_records:,} rows  {rate:,.0f} rows/s  "
            f"processing {info.processing_delay_ms} ms  delay {info.total_delay_ms} ms"
        )
        if info.backlog:
            line += f"  backlog {info.backlog}"
        if info.failed:
            line += "  FAILED"
        print(line, file=self._out, flush=True)
