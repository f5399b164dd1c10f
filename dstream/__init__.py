"""dstream: discretized streams (D-Streams) on Apache Spark.

A drop-in for ``pyspark.streaming``: change ``from pyspark.streaming import StreamingContext``
to ``from dstream import StreamingContext``. The graph, the per-interval RDD generation and
the job scheduling are Python on the driver; every interval is a deterministic Spark batch
job, so lost and slow work is recomputed from lineage.

The names below are loaded on first use, so ``import dstream.time`` and the other pure
modules do not import PySpark.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dstream.api.table_output import read_table
    from dstream.clock import Clock, ManualClock, SystemClock
    from dstream.context import StreamingContext
    from dstream.dstream import DStream
    from dstream.errors import (
        ContextStateError,
        DStreamError,
        StreamingJobError,
        UnpicklableFunctionError,
        UserFunctionError,
    )
    from dstream.listener import BatchInfo, OutputOperationInfo, StreamingListener
    from dstream.settings import StreamingSettings
    from dstream.streams.quarantine import QuarantinedRecord, read_quarantined
    from dstream.time import Duration, Interval, Time

__version__ = "0.2.0"  # pyproject.toml reads it; CHANGELOG.md says what changed

_EXPORTS = {
    "BatchInfo": "dstream.listener",
    "Clock": "dstream.clock",
    "ContextStateError": "dstream.errors",
    "DStream": "dstream.dstream",
    "DStreamError": "dstream.errors",
    "Duration": "dstream.time",
    "Interval": "dstream.time",
    "ManualClock": "dstream.clock",
    "OutputOperationInfo": "dstream.listener",
    "QuarantinedRecord": "dstream.streams.quarantine",
    "StreamingContext": "dstream.context",
    "StreamingJobError": "dstream.errors",
    "StreamingListener": "dstream.listener",
    "StreamingSettings": "dstream.settings",
    "SystemClock": "dstream.clock",
    "Time": "dstream.time",
    "UnpicklableFunctionError": "dstream.errors",
    "UserFunctionError": "dstream.errors",
    "read_quarantined": "dstream.streams.quarantine",
    "read_table": "dstream.api.table_output",
}

__all__ = [
    "BatchInfo",
    "Clock",
    "ContextStateError",
    "DStream",
    "DStreamError",
    "Duration",
    "Interval",
    "ManualClock",
    "OutputOperationInfo",
    "QuarantinedRecord",
    "StreamingContext",
    "StreamingJobError",
    "StreamingListener",
    "StreamingSettings",
    "SystemClock",
    "Time",
    "UnpicklableFunctionError",
    "UserFunctionError",
    "read_quarantined",
    "read_table",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'dstream' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value
