"""Python side of the JVM shim: scheduler events from ``io.dstream.shim.EventRecorder``.

The recorder is a ``SparkListener`` on the driver JVM that appends one JSON object per event to
a bounded buffer; :class:`TaskEventFeed` drains thousands of them per Py4J call and
:func:`parse_events` turns them into the frozen dataclasses below. Those dataclasses are the one
definition of the wire format: each event's keys are their field names (the recorder writes
them, see its Javadoc) and the parser is derived from their fields and types.

Nothing here imports pyspark or py4j at module import time; :func:`parse_events` is pure
and needs no Spark at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from dstream.jvm import (
    RECORDER_CLASS,
    SHIM_JAR,
    ShimMissingError,
    class_on_classpath,
    gateway_of,
    invoke_static,
    recorder_class_from_jar,
    shim_class,
)

if TYPE_CHECKING:
    from pyspark import SparkContext

__all__ = [
    "RECORDER_CLASS",
    "SHIM_JAR",
    "ExecutorAdded",
    "ExecutorRemoved",
    "JobEnd",
    "JobStart",
    "ListenerEvent",
    "ShimMissingError",
    "StageCompleted",
    "StageSubmitted",
    "TaskEnd",
    "TaskEventFeed",
    "TaskStart",
    "invoke_static",
    "parse_events",
    "shim_class",
]

#: ``EventRecorder.FORMAT_VERSION`` this parser understands.
FORMAT_VERSION: Final = 2


# --------------------------------------------------------------------------------------- events


@dataclass(frozen=True, slots=True)
class TaskStart:
    stage_id: int
    stage_attempt: int
    task_id: int
    index: int  # index inside the task set
    partition: int  # RDD partition computed
    attempt: int
    executor_id: str
    host: str
    launch_time: int  # epoch ms
    speculative: bool
    job_group: str | None


@dataclass(frozen=True, slots=True)
class TaskEnd:
    stage_id: int
    stage_attempt: int
    task_id: int
    index: int
    partition: int
    attempt: int
    executor_id: str
    host: str
    launch_time: int  # epoch ms
    finish_time: int  # epoch ms
    speculative: bool
    successful: bool
    reason_kind: str  # Success, ExceptionFailure, ExecutorLostFailure, TaskKilled, ...
    reason: str | None  # None on success
    task_type: str  # ResultTask or ShuffleMapTask
    job_group: str | None

    @property
    def duration_ms(self) -> int:
        return self.finish_time - self.launch_time


@dataclass(frozen=True, slots=True)
class StageSubmitted:
    stage_id: int
    attempt: int
    num_tasks: int
    submission_time: int | None
    job_group: str | None
    name: str


@dataclass(frozen=True, slots=True)
class StageCompleted:
    stage_id: int
    attempt: int
    num_tasks: int
    submission_time: int | None
    completion_time: int | None
    successful: bool
    failure_reason: str | None
    job_group: str | None
    name: str


@dataclass(frozen=True, slots=True)
class JobStart:
    job_id: int
    time: int
    job_group: str | None
    stage_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class JobEnd:
    job_id: int
    time: int
    successful: bool
    failure_reason: str | None
    job_group: str | None


@dataclass(frozen=True, slots=True)
class ExecutorAdded:
    executor_id: str
    host: str
    time: int
    total_cores: int
    snapshot: bool  # already registered when the recorder was installed


@dataclass(frozen=True, slots=True)
class ExecutorRemoved:
    executor_id: str
    host: str | None
    time: int
    reason: str | None


ListenerEvent = (
    TaskStart
    | TaskEnd
    | StageSubmitted
    | StageCompleted
    | JobStart
    | JobEnd
    | ExecutorAdded
    | ExecutorRemoved
)

# ------------------------------------------------------------------------------------ parsing


def _kind(cls: type) -> str:
    """``TaskStart`` -> ``TASK_START``: the event's kind on the wire."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).upper()


def _int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"expected a string, got {value!r}")
    return value


def _bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {value!r}")
    return value


def _int_tuple(value: object) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise ValueError(f"expected a list of integers, got {value!r}")
    return tuple(_int(v) for v in value)


def _optional(convert: Callable[[object], Any]) -> Callable[[object], Any]:
    return lambda value: None if value is None else convert(value)


_CONVERTERS: Final[dict[str, Callable[[object], Any]]] = {
    "int": _int,
    "str": _str,
    "bool": _bool,
    "tuple[int, ...]": _int_tuple,
    "int | None": _optional(_int),
    "str | None": _optional(_str),
}

#: kind -> (event class, (field name, converter) per field): derived from the dataclasses, the
#: one definition of the wire format (the Java recorder writes these keys).
_PARSERS: Final[dict[str, tuple[type, tuple[tuple[str, Callable[[object], Any]], ...]]]] = {
    _kind(cls): (cls, tuple((f.name, _CONVERTERS[str(f.type)]) for f in fields(cls)))
    for cls in (
        TaskStart,
        TaskEnd,
        StageSubmitted,
        StageCompleted,
        JobStart,
        JobEnd,
        ExecutorAdded,
        ExecutorRemoved,
    )
}


def _parse(obj: object) -> ListenerEvent:
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    kind = obj.get("kind")
    parser = _PARSERS.get(kind) if isinstance(kind, str) else None
    if parser is None:
        raise ValueError(f"unknown event kind {kind!r}")
    cls, converters = parser
    unknown = set(obj) - {"kind"} - {name for name, _ in converters}
    if unknown:
        raise ValueError(f"{kind} has unknown fields {sorted(unknown)}")
    values = {}
    for name, convert in converters:
        if name not in obj:
            raise ValueError(f"{kind} has no field {name!r}")
        try:
            values[name] = convert(obj[name])
        except ValueError as exc:
            raise ValueError(f"{kind} field {name!r}: {exc}") from None
    event: ListenerEvent = cls(**values)
    return event


def parse_events(text: str) -> list[ListenerEvent]:
    """Parses the output of ``EventRecorder.drain``: one JSON object per ``\\n``-terminated line.

    Raises ValueError naming the (1-based) line number and the line when a line is not JSON,
    has an unknown kind, or a field that is missing, unknown or of the wrong type.
    """
    events: list[ListenerEvent] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        try:
            events.append(_parse(json.loads(line)))
        except ValueError as exc:  # json.JSONDecodeError is a ValueError
            raise ValueError(f"malformed shim event on line {lineno}: {exc}: {line!r}") from exc
    return events


# ------------------------------------------------------------------------------ the live feed


# One class loader per (JVM, jar): loading the jar again for every attach would give a new
# ``EventRecorder`` class each time, and the recorder's per-SparkContext idempotency is per class.
def _install_via_reflection(sc: SparkContext, cls: Any) -> Any:
    gateway = gateway_of(sc)
    jvm = sc._jvm
    assert gateway is not None and jvm is not None
    jsc = sc._jsc.sc()
    param_types = gateway.new_array(jvm.java.lang.Class, 1)
    param_types[0] = cls.getClassLoader().loadClass("org.apache.spark.SparkContext")
    args = gateway.new_array(jvm.java.lang.Object, 1)
    args[0] = jsc
    return cls.getMethod("install", param_types).invoke(None, args)


class TaskEventFeed:
    """Batched reader of the scheduler events recorded on the driver JVM."""

    def __init__(self, recorder: Any) -> None:
        self._recorder = recorder

    @classmethod
    def attach(cls, sc: SparkContext, jar: Path | None = None) -> TaskEventFeed:
        """Registers (once per SparkContext) the recorder on ``sc`` and returns a feed over it.

        Uses ``io.dstream.shim.EventRecorder`` from the driver classpath when it is there
        (``spark.jars``, ``spark.driver.extraClassPath``, ``spark.extraListeners``); otherwise
        loads ``jar`` (default :data:`SHIM_JAR`) into the running JVM with a ``URLClassLoader``.
        Attaching again returns a feed over the same recorder: feeds share one buffer, so each
        event is returned by exactly one ``poll``.

        Raises ShimMissingError if the class is not on the classpath and the jar does not exist.
        """
        if class_on_classpath(sc):
            jvm = sc._jvm
            assert jvm is not None
            recorder = jvm.io.dstream.shim.EventRecorder.install(sc._jsc.sc())
        else:
            path = SHIM_JAR if jar is None else Path(jar)
            if not path.is_file():
                raise ShimMissingError(path)
            recorder = _install_via_reflection(sc, recorder_class_from_jar(sc, path))
        version = int(recorder.formatVersion())
        if version != FORMAT_VERSION:
            raise RuntimeError(
                f"the dstream JVM shim writes event format {version}, this module reads "
                f"{FORMAT_VERSION}: rebuild it with `make shim` and restart the driver process"
            )
        return cls(recorder)

    @property
    def recorder(self) -> Any:
        """The Py4J handle of the JVM ``EventRecorder`` (equal for feeds over one recorder)."""
        return self._recorder

    def poll(self, max_events: int = 100_000) -> list[ListenerEvent]:
        """Removes and returns up to ``max_events`` events, oldest first (one Py4J call)."""
        return parse_events(self._recorder.drain(max_events))

    def live_executors(self) -> dict[str, str]:
        """Executor id -> host of the executors alive now (as the listener bus reported)."""
        executors: dict[str, str] = json.loads(str(self._recorder.liveExecutors()))
        return executors

    def dropped(self) -> int:
        """Events lost because the JVM buffer was full (the oldest are dropped first)."""
        return int(self._recorder.dropped())

    def pending(self) -> int:
        """Events waiting in the JVM buffer."""
        return int(self._recorder.pending())
