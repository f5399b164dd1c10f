"""Python side of the JVM shim: scheduler events from ``io.dstream.shim.EventRecorder``.

The recorder is a ``SparkListener`` on the driver JVM that appends one text record per event to
a bounded buffer; :class:`TaskEventFeed` drains thousands of them per Py4J call and
:func:`parse_events` turns them into the frozen dataclasses below. The wire format (fields per
kind, escaping, ``\\N`` for a missing value) is documented in the Javadoc of ``EventRecorder``
and mirrored by :data:`_FIELD_COUNTS`.

Nothing here imports pyspark or py4j at module import time; :func:`parse_events` is pure
and needs no Spark at all.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from pyspark import SparkContext

__all__ = [
    "RECORDER_CLASS",
    "SHIM_JAR",
    "Event",
    "ExecutorAdded",
    "ExecutorRemoved",
    "JobEnd",
    "JobStart",
    "ShimMissingError",
    "StageCompleted",
    "StageSubmitted",
    "TaskEnd",
    "TaskEventFeed",
    "TaskStart",
    "parse_events",
]

#: Where ``jvm-shim/build.sh`` puts the jar (the package is installed in editable mode).
SHIM_JAR: Final[Path] = (
    Path(__file__).resolve().parents[2] / "jvm-shim" / "listener" / "target" / "dstream-shim.jar"
)
RECORDER_CLASS: Final = "io.dstream.shim.EventRecorder"
#: ``EventRecorder.FORMAT_VERSION`` this parser understands.
FORMAT_VERSION: Final = 1


class ShimMissingError(RuntimeError):
    """The shim jar is needed but has not been built."""

    def __init__(self, path: Path, needed_by: str | None = None) -> None:
        why = f" ({needed_by} needs it)" if needed_by else ""
        super().__init__(
            f"dstream JVM shim jar not found at {path}{why}; "
            "build it with `make shim` (or `bash jvm-shim/build.sh`)"
        )
        self.path = path


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


Event = (
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

_NULL: Final = "\\N"
_ESCAPES: Final = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}

#: Number of TAB-separated fields per kind, the kind itself included.
_FIELD_COUNTS: Final = {
    "TASK_START": 12,
    "TASK_END": 17,
    "STAGE_SUBMITTED": 7,
    "STAGE_COMPLETED": 10,
    "JOB_START": 5,
    "JOB_END": 6,
    "EXECUTOR_ADDED": 6,
    "EXECUTOR_REMOVED": 5,
}


def _unescape(field: str) -> str:
    if "\\" not in field:
        return field
    if field == _NULL:
        raise ValueError("missing value (\\N) in a required field")
    out: list[str] = []
    i = 0
    n = len(field)
    while i < n:
        c = field[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        if i + 1 >= n or field[i + 1] not in _ESCAPES:
            raise ValueError(f"bad escape at offset {i} in {field!r}")
        out.append(_ESCAPES[field[i + 1]])
        i += 2
    return "".join(out)


def _opt_str(field: str) -> str | None:
    return None if field == _NULL else _unescape(field)


def _int(field: str) -> int:
    if not field or not (field.isdigit() or (field[0] == "-" and field[1:].isdigit())):
        raise ValueError(f"expected an integer, got {field!r}")
    return int(field)


def _opt_int(field: str) -> int | None:
    return None if field == _NULL else _int(field)


def _bool(field: str) -> bool:
    if field == "true":
        return True
    if field == "false":
        return False
    raise ValueError(f"expected true or false, got {field!r}")


def _int_list(field: str) -> tuple[int, ...]:
    return tuple(_int(x) for x in field.split(",")) if field else ()


def _source(field: str) -> bool:
    if field == "snapshot":
        return True
    if field == "live":
        return False
    raise ValueError(f"expected live or snapshot, got {field!r}")


def _parse_line(f: list[str]) -> Event:
    kind = f[0]
    if kind == "TASK_START":
        return TaskStart(
            stage_id=_int(f[1]),
            stage_attempt=_int(f[2]),
            task_id=_int(f[3]),
            index=_int(f[4]),
            partition=_int(f[5]),
            attempt=_int(f[6]),
            executor_id=_unescape(f[7]),
            host=_unescape(f[8]),
            launch_time=_int(f[9]),
            speculative=_bool(f[10]),
            job_group=_opt_str(f[11]),
        )
    if kind == "TASK_END":
        return TaskEnd(
            stage_id=_int(f[1]),
            stage_attempt=_int(f[2]),
            task_id=_int(f[3]),
            index=_int(f[4]),
            partition=_int(f[5]),
            attempt=_int(f[6]),
            executor_id=_unescape(f[7]),
            host=_unescape(f[8]),
            launch_time=_int(f[9]),
            finish_time=_int(f[10]),
            speculative=_bool(f[11]),
            successful=_bool(f[12]),
            reason_kind=_unescape(f[13]),
            reason=_opt_str(f[14]),
            task_type=_unescape(f[15]),
            job_group=_opt_str(f[16]),
        )
    if kind == "STAGE_SUBMITTED":
        return StageSubmitted(
            stage_id=_int(f[1]),
            attempt=_int(f[2]),
            num_tasks=_int(f[3]),
            submission_time=_opt_int(f[4]),
            job_group=_opt_str(f[5]),
            name=_unescape(f[6]),
        )
    if kind == "STAGE_COMPLETED":
        return StageCompleted(
            stage_id=_int(f[1]),
            attempt=_int(f[2]),
            num_tasks=_int(f[3]),
            submission_time=_opt_int(f[4]),
            completion_time=_opt_int(f[5]),
            successful=_bool(f[6]),
            failure_reason=_opt_str(f[7]),
            job_group=_opt_str(f[8]),
            name=_unescape(f[9]),
        )
    if kind == "JOB_START":
        return JobStart(
            job_id=_int(f[1]),
            time=_int(f[2]),
            job_group=_opt_str(f[3]),
            stage_ids=_int_list(f[4]),
        )
    if kind == "JOB_END":
        return JobEnd(
            job_id=_int(f[1]),
            time=_int(f[2]),
            successful=_bool(f[3]),
            failure_reason=_opt_str(f[4]),
            job_group=_opt_str(f[5]),
        )
    if kind == "EXECUTOR_ADDED":
        return ExecutorAdded(
            executor_id=_unescape(f[1]),
            host=_unescape(f[2]),
            time=_int(f[3]),
            total_cores=_int(f[4]),
            snapshot=_source(f[5]),
        )
    if kind == "EXECUTOR_REMOVED":
        return ExecutorRemoved(
            executor_id=_unescape(f[1]),
            host=_opt_str(f[2]),
            time=_int(f[3]),
            reason=_opt_str(f[4]),
        )
    raise AssertionError(kind)  # unreachable: kinds are checked against _FIELD_COUNTS first


def parse_events(text: str) -> list[Event]:
    """Parses the output of ``EventRecorder.drain``: one event per ``\\n``-terminated line.

    Raises ValueError naming the (1-based) line number and the line when a line has an unknown
    kind, the wrong number of fields, or a field that does not parse.
    """
    events: list[Event] = []
    if not text:
        return events
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    for lineno, line in enumerate(lines, start=1):
        fields = line.split("\t")
        expected = _FIELD_COUNTS.get(fields[0])
        try:
            if expected is None:
                raise ValueError(f"unknown event kind {fields[0]!r}")
            if len(fields) != expected:
                raise ValueError(f"{fields[0]} needs {expected} fields, got {len(fields)}")
            events.append(_parse_line(fields))
        except ValueError as exc:
            raise ValueError(f"malformed shim event on line {lineno}: {exc}: {line!r}") from exc
    return events


# ------------------------------------------------------------------------------ the live feed

# One class loader per (JVM, jar): loading the jar again for every attach would give a new
# ``EventRecorder`` class each time, and the recorder's per-SparkContext idempotency is per class.
_loader_lock = threading.Lock()
_loaded: dict[str, tuple[Any, Any]] = {}  # resolved jar path -> (gateway, recorder Class)


def _class_on_classpath(sc: SparkContext) -> bool:
    """Whether the driver can already load the recorder (spark.jars, extraClassPath, ...)."""
    from py4j.protocol import Py4JJavaError

    jvm = sc._jvm
    assert jvm is not None
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    try:
        jvm.java.lang.Class.forName(RECORDER_CLASS, False, loader)
    except Py4JJavaError as exc:
        if "ClassNotFoundException" in str(exc.java_exception.getClass().getName()):
            return False
        raise
    return True


def _recorder_class_from_jar(sc: SparkContext, jar: Path) -> Any:
    gateway = sc._gateway
    jvm = sc._jvm
    assert gateway is not None and jvm is not None
    key = str(jar.resolve())
    with _loader_lock:
        cached = _loaded.get(key)
        if cached is not None and cached[0] is gateway:
            return cached[1]
        urls = gateway.new_array(jvm.java.net.URL, 1)
        urls[0] = jvm.java.io.File(key).toURI().toURL()
        parent = jvm.java.lang.Thread.currentThread().getContextClassLoader()
        loader = jvm.java.net.URLClassLoader(urls, parent)
        cls = loader.loadClass(RECORDER_CLASS)
        _loaded[key] = (gateway, cls)
        return cls


def _install_via_reflection(sc: SparkContext, cls: Any) -> Any:
    gateway = sc._gateway
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
        if _class_on_classpath(sc):
            jvm = sc._jvm
            assert jvm is not None
            recorder = jvm.io.dstream.shim.EventRecorder.install(sc._jsc.sc())
        else:
            path = SHIM_JAR if jar is None else Path(jar)
            if not path.is_file():
                raise ShimMissingError(path)
            recorder = _install_via_reflection(sc, _recorder_class_from_jar(sc, path))
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

    def poll(self, max_events: int = 100_000) -> list[Event]:
        """Removes and returns up to ``max_events`` events, oldest first (one Py4J call)."""
        return parse_events(self._recorder.drain(max_events))

    def live_executors(self) -> dict[str, str]:
        """Executor id -> host of the executors alive now (as the listener bus reported)."""
        text = str(self._recorder.liveExecutors())
        return dict(line.split("\t", 1) for line in text.splitlines() if line)

    def dropped(self) -> int:
        """Events lost because the JVM buffer was full (the oldest are dropped first)."""
        return int(self._recorder.dropped())

    def pending(self) -> int:
        """Events waiting in the JVM buffer."""
        return int(self._recorder.pending())
