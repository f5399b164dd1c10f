"""A pyspark.streaming program runs on dstream by changing its import, with the same output."""

from __future__ import annotations

import importlib
import os
import socket
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyspark
import pytest

PROGRAM = """
from {module} import StreamingContext

def build(sc, batches, sink):
    ssc = StreamingContext(sc, 0.5)
    lines = ssc.queueStream([sc.parallelize(b, 2) for b in batches])
    words = lines.flatMap(lambda line: line.split(" ")).filter(lambda w: w)
    counts = words.map(lambda w: (w, 1)).reduceByKey(lambda a, b: a + b)
    longest = words.map(lambda w: (len(w), w)).reduce(max)
    counts.foreachRDD(lambda t, rdd: sink.add("counts", sorted(rdd.collect())))
    longest.foreachRDD(lambda rdd: sink.add("longest", rdd.collect()))
    return ssc
"""

BATCHES = [["to be or not to be", "that is"], ["the question"], ["be be be"]]


class Sink:
    def __init__(self, wanted: int) -> None:
        self.got: dict[str, list[Any]] = {"counts": [], "longest": []}
        self.lock = threading.Lock()
        self.full = threading.Event()
        self.wanted = wanted

    def add(self, key: str, value: Any) -> None:
        with self.lock:
            self.got[key].append(value)
            if all(len(v) >= self.wanted for v in self.got.values()):
                self.full.set()


def run(sc: Any, module: str) -> dict[str, list[Any]]:
    namespace: dict[str, Any] = {}
    exec(PROGRAM.format(module=module), namespace)
    sink = Sink(len(BATCHES))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # pyspark.streaming is deprecated
        ssc = namespace["build"](sc, BATCHES, sink)
    ssc.start()
    try:
        assert sink.full.wait(120), f"{module}: only {sink.got} after 120 s"
    finally:
        ssc.stop(stopSparkContext=False, stopGraceFully=False)
    return {k: v[: len(BATCHES)] for k, v in sink.got.items()}


def test_the_same_program_gives_the_same_output_on_both_engines(sc: Any) -> None:
    ours = run(sc, "dstream")
    theirs = run(sc, "pyspark.streaming")
    assert ours == theirs
    assert ours["counts"][2] == [("be", 3)]
    assert ours["longest"][0] == [(4, "that")]


# ---- Spark's own streaming examples, unchanged but for the import --------------------------
# The seven Python examples in pyspark's package (examples/src/main/python/streaming) run
# in this process on the session's SparkContext, on pyspark.streaming and then on dstream,
# over the same short input, and must print the same bytes. Both engines run on a manual
# clock that starts at 0 (pyspark.streaming's through spark.streaming.clock), so the batch
# times they print are the same and no test waits for real seconds to pass (a 5 s batch
# costs nothing). What the test changes around an example, not in it: SparkContext(...)
# returns the session's context, stop() keeps it, awaitTermination() (and queue_stream's
# time.sleep(6)) advances the clock batch by batch instead of waiting, and the socket
# examples' netcat is a test server that sends each batch's line once the receiver is there.

SPARK_EXAMPLES = Path(pyspark.__file__).parent / "examples/src/main/python/streaming"
JVM_MANUAL_CLOCK = "org.apache.spark.util.ManualClock"


@dataclass
class Case:
    """One example: its arguments (``{host}``, ``{port}``, ``{dir}``, ``{out}``), the batch
    interval it sets, and per batch the line its socket sends (or the file its directory
    gets); None: nothing that batch."""

    name: str
    argv: list[str]
    batch_ms: int
    batches: list[str | None]
    files: dict[str, str] = field(default_factory=dict)  # written under the run's cwd first


AFINN = "happy 3\nsad -2\ngood 3\nbad -3\n"
CASES = [
    Case("network_wordcount", ["{host}", "{port}"], 1000, ["to be or not to be", None, "be"]),
    Case("hdfs_wordcount", ["{dir}"], 1000, ["a b a\nc a", None, "b b"]),
    Case("queue_stream", [], 1000, [None] * 6),
    Case("stateful_network_wordcount", ["{host}", "{port}"], 1000, ["hello you", "you and you"]),
    Case(
        "network_wordjoinsentiments",
        ["{host}", "{port}"],
        5000,
        ["happy good happy sad day", None, "bad bad good"],
        {"data/streaming/AFINN-111.txt": AFINN},
    ),
    Case(
        "recoverable_network_wordcount",
        ["{host}", "{port}", "{dir}", "{out}"],
        1000,
        ["a x b y x", "c z z"],
    ),
    Case("sql_network_wordcount", ["{host}", "{port}"], 1000, ["spark sql spark", None]),
]


def test_every_example_of_spark_is_compared() -> None:
    shipped = {p.stem for p in SPARK_EXAMPLES.glob("*.py")} - {"__init__"}
    assert shipped == {c.name for c in CASES}


class _Completed:
    """Batch times the engine reported complete (pyspark.streaming's listener)."""

    def __init__(self) -> None:
        self.times: set[int] = set()
        self.cond = threading.Condition()

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        with self.cond:
            self.times.add(int(batchCompleted.batchInfo().batchTime().milliseconds()))
            self.cond.notify_all()

    def wait(self, ms: int) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: ms in self.times, 120)


class EngineDriver:
    """How the test drives one engine's StreamingContext on its manual clock."""

    module: str

    def __init__(self, sc: Any) -> None:
        self.sc = sc

    def manual_clock(self) -> Any:
        raise NotImplementedError

    def advance(self, ssc: Any, ms: int) -> None:
        raise NotImplementedError

    def wait_batch(self, ssc: Any, ms: int) -> bool:
        raise NotImplementedError

    def wait_received(self, ssc: Any, lines: int) -> bool:
        raise NotImplementedError


class PySparkEngine(EngineDriver):
    module = "pyspark.streaming"

    @contextmanager
    def manual_clock(self) -> Iterator[None]:
        conf = self.sc._jsc.sc().conf()
        conf.set("spark.streaming.clock", JVM_MANUAL_CLOCK)
        try:
            yield
        finally:
            conf.remove("spark.streaming.clock")

    def advance(self, ssc: Any, ms: int) -> None:
        ssc._jssc.ssc().scheduler().clock().advance(ms)

    def wait_batch(self, ssc: Any, ms: int) -> bool:
        return bool(ssc._dropin_completed.wait(ms))

    def wait_received(self, ssc: Any, lines: int) -> bool:
        # One line per batch is one block; the receiver hands it over within its 200 ms
        # block interval.
        tracker = ssc._jssc.ssc().scheduler().receiverTracker()
        deadline = time.monotonic() + 120
        while not tracker.hasUnallocatedBlocks():
            if time.monotonic() > deadline:
                return False
            threading.Event().wait(0.02)
        return True


class DStreamEngine(EngineDriver):
    module = "dstream"

    @contextmanager
    def manual_clock(self) -> Iterator[None]:
        from dstream import ManualClock
        from dstream.clock import programs_use

        self.clock = ManualClock(0)
        with programs_use(self.clock):
            yield

    def advance(self, ssc: Any, ms: int) -> None:
        self.clock.advance(ms)

    def wait_batch(self, ssc: Any, ms: int) -> bool:
        from dstream import Time

        return bool(ssc.wait_for_batch(Time(ms), 120))

    def wait_received(self, ssc: Any, lines: int) -> bool:
        from dstream.scheduler.engine import engine_of

        (source,) = engine_of(ssc).graph.inputs
        return bool(source._wait_for_buffered(lines, 120))


def _new_context(cls: type, *args: Any, **kwargs: Any) -> Any:
    return object.__new__(cls)


@contextmanager
def session_spark_context(sc: Any) -> Iterator[None]:
    """``SparkContext(appName=...)`` in an example returns the session's context. Afterwards
    ``SparkContext.__new__`` stays a plain ``object.__new__(cls)``: deleting a ``__new__``
    set on a class leaves CPython calling ``object.__new__`` with the constructor's
    arguments, which it refuses."""
    from pyspark import SparkContext

    init = SparkContext.__dict__["__init__"]
    SparkContext.__new__ = staticmethod(lambda cls, *a, **k: sc)  # type: ignore[assignment,method-assign]
    SparkContext.__init__ = lambda self, *a, **k: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        SparkContext.__new__ = staticmethod(_new_context)  # type: ignore[assignment,method-assign]
        SparkContext.__init__ = init  # type: ignore[method-assign]


@contextmanager
def working_directory(sc: Any, where: Path) -> Iterator[None]:
    """Relative paths (a checkpoint "checkpoint", "data/streaming/...") resolve in ``where``,
    for the driver's Python and for Hadoop's local file system in the JVM alike."""
    jvm = sc._jvm
    local = jvm.org.apache.hadoop.fs.FileSystem.getLocal(sc._jsc.hadoopConfiguration())
    before, cwd = local.getWorkingDirectory(), os.getcwd()
    local.setWorkingDirectory(jvm.org.apache.hadoop.fs.Path(str(where)))
    os.chdir(where)
    try:
        yield
    finally:
        os.chdir(cwd)
        local.setWorkingDirectory(before)


def run_example(
    sc: Any, engine: EngineDriver, case: Case, work: Path, capsys: pytest.CaptureFixture[str]
) -> str:
    """What the example prints on ``engine``, run over ``case``'s batches in ``work``."""
    source = (SPARK_EXAMPLES / f"{case.name}.py").read_text()
    if engine.module == "dstream":
        changed = source.replace("from pyspark.streaming import", "from dstream import")
        assert changed.count("from dstream import") == 1
        source = changed
    work.mkdir(parents=True, exist_ok=True)
    for name, text in case.files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(120)
    stream_dir = work / "in"
    stream_dir.mkdir(exist_ok=True)
    values = {
        "host": "127.0.0.1",
        "port": str(server.getsockname()[1]),
        "dir": str(work / "ckpt") if case.name.startswith("recoverable") else str(stream_dir),
        "out": str(work.parent / "recoverable-out.txt"),
    }
    argv = [f"{case.name}.py", *(a.format(**values) for a in case.argv)]
    module = importlib.import_module(engine.module)
    context_class = module.StreamingContext
    stop, start = context_class.stop, context_class.start
    conns: list[socket.socket] = []

    def drive(ssc: Any) -> None:
        """The example's batches: each one's input, then the clock to its end."""
        for i, text in enumerate(case.batches):
            if text is not None and case.name == "hdfs_wordcount":
                hidden = stream_dir / f".f{i}"
                hidden.write_text(text + "\n")
                mtime_ns = (i * case.batch_ms + case.batch_ms // 2) * 1_000_000
                os.utime(hidden, ns=(mtime_ns, mtime_ns))
                hidden.rename(stream_dir / f"f{i}.txt")
            elif text is not None:
                if not conns:
                    conns.append(server.accept()[0])
                conns[0].sendall(text.encode() + b"\n")
                assert engine.wait_received(ssc, 1), f"{case.name}: line {i} not received"
            engine.advance(ssc, case.batch_ms)
            end = (i + 1) * case.batch_ms
            assert engine.wait_batch(ssc, end), f"{case.name} on {engine.module}: batch {end}"

    def started(self: Any) -> None:
        if engine.module == "pyspark.streaming":
            from pyspark.streaming import StreamingListener

            completed = type("Completed", (_Completed, StreamingListener), {})()
            _Completed.__init__(completed)
            self._dropin_completed = completed
            self.addStreamingListener(completed)
        start(self)

    def awaited(self: Any, timeout: Any = None) -> None:
        drive(self)
        self.stop()

    def kept_spark(self: Any, stopSparkContext: bool = True, stopGraceFully: bool = False) -> None:
        # Spark's graceful stop waits for its timer's next tick, which a manual clock never
        # gives; every batch driven has completed by now, so the output is the same.
        graceful = stopGraceFully and engine.module == "dstream"
        stop(self, stopSparkContext=False, stopGraceFully=graceful)

    main_thread = threading.current_thread()
    real_sleep = time.sleep
    running: list[Any] = []

    def sleep(seconds: float) -> None:  # queue_stream.py: time.sleep(6) while it runs
        if threading.current_thread() is main_thread and running:
            drive(running[-1])
        else:
            real_sleep(seconds)

    def remember_start(self: Any) -> None:
        running.append(self)
        started(self)

    capsys.readouterr()
    with (
        session_spark_context(sc),
        engine.manual_clock(),
        working_directory(sc, work),
        warnings.catch_warnings(),
        pytest.MonkeyPatch.context() as patch,
    ):
        warnings.simplefilter("ignore", FutureWarning)  # pyspark.streaming is deprecated
        patch.setattr(context_class, "start", remember_start)
        patch.setattr(context_class, "awaitTermination", awaited)
        patch.setattr(context_class, "stop", kept_spark)
        patch.setattr(time, "sleep", sleep)
        patch.setattr(sys, "argv", argv)
        try:
            exec(compile(source, argv[0], "exec"), {"__name__": "__main__"})
        finally:
            for ssc in running:
                stop(ssc, stopSparkContext=False)
            for conn in conns:
                conn.close()
            server.close()
    return capsys.readouterr().out


@pytest.fixture
def few_sql_partitions(sc: Any) -> Iterator[None]:
    """sql_network_wordcount's group-by over 2 shuffle partitions instead of 200 (the same
    for both engines): a fraction of the CPU."""
    from pyspark.sql import SparkSession

    conf = SparkSession.builder.config(conf=sc.getConf()).getOrCreate().conf
    before = conf.get("spark.sql.shuffle.partitions")
    conf.set("spark.sql.shuffle.partitions", "2")
    yield
    conf.set("spark.sql.shuffle.partitions", before)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_sparks_own_example_prints_the_same_on_both_engines(
    sc: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
    case: Case,
) -> None:
    if case.name == "sql_network_wordcount":
        request.getfixturevalue("few_sql_partitions")
    theirs = run_example(sc, PySparkEngine(sc), case, tmp_path / "pyspark", capsys)
    ours = run_example(sc, DStreamEngine(sc), case, tmp_path / "dstream", capsys)
    assert theirs.count("\n") > 3, theirs  # the example printed its batches
    assert ours == theirs
    if case.name == "stateful_network_wordcount":
        # Run again over its "checkpoint" directory, as its users do: a new program, the
        # same output (it failed at start() with CheckpointDirectoryError).
        again = run_example(sc, DStreamEngine(sc), case, tmp_path / "dstream", capsys)
        assert again == theirs
