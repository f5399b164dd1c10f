"""The four systems of the throughput benchmark (bench/paper/throughput.py), each running the three
workloads of issue 7 on a watched directory and recording, per interval (batch), when its
result was produced, which files it read, and how long it took to process.

Workloads (on 100-byte records of Zipf-distributed words):

- ``grep``: the number of records of the interval that contain :data:`PATTERN`;
- ``wordcount``: ``{word: count}`` over the last :data:`WINDOW_S` seconds, sliding by one
  interval, kept with the inverse function (add what enters, subtract what leaves, drop
  zeros), collected to the driver;
- ``topk``: the :data:`TOP` most frequent words over the same window, ``[word, count]``
  ordered by count descending then word ascending.

Systems:

- ``dstream``: the workloads on dstream's columnar fast path
  (:func:`dstream_columnar_program`: ``textBatchStream``, ``contains``, ``words``, and
  ``countByValueAndWindow``: counted per task before the shuffle, the same window with the
  inverse, keys without a count left dropped);
- ``dstream-records`` and ``pyspark-streaming``: the same per-record program
  (:func:`dstream_program`), only the import differs;
- ``structured``: Structured Streaming, ``readStream.text`` with a processing-time trigger of
  the interval and ``foreachBatch``; the window is kept on the driver as a ring of
  per-interval counts with the inverse (see :func:`start_structured` for why);
- ``pyarrow``: one Python thread, one core, reading each new file with pyarrow and computing
  with pyarrow.compute: the physical reference of what one core does with these records.
"""

from __future__ import annotations

import heapq
import json
import operator
import os
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from importlib import import_module
from pathlib import Path
from typing import Any

from bench.common.spark import bench_conf

__all__ = [
    "PATTERN",
    "SYSTEMS",
    "WINDOW_S",
    "WORKLOADS",
    "Batch",
    "Recorder",
    "Running",
    "WindowCounts",
    "start_system",
    "top",
]

SYSTEMS = ("dstream", "dstream-records", "pyspark-streaming", "structured", "pyarrow")
WORKLOADS = ("grep", "wordcount", "topk")
PATTERN = "kato"  # in ~2 % of the records
WINDOW_S = 30
TOP = 10


def now_ms() -> int:
    return int(time.time() * 1000)


def top(counts: dict[str, int], k: int = TOP) -> list[list[Any]]:
    """The ``k`` most frequent words, count descending then word ascending (no ties left
    to chance, so every system's answer is comparable)."""
    best = heapq.nsmallest(k, counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [[w, c] for w, c in best]


@dataclass
class Batch:
    """One interval of one system. ``time_ms`` is the batch time (the end of the interval)
    for the DStream engines and pyarrow, the trigger's start for Structured Streaming."""

    time_ms: int | None = None
    processing_ms: float | None = None
    result_ms: int | None = None
    result: Any = None
    files: list[str] = field(default_factory=list)


class Recorder:
    """What a system reports during a probe, by batch key (batch time in ms, or
    Structured Streaming's batch id). Written from listener and output threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.batches: dict[int, Batch] = {}

    def update(self, key: int, **fields: Any) -> None:
        with self._lock:
            batch = self.batches.setdefault(key, Batch())
            for name, value in fields.items():
                setattr(batch, name, value)

    def snapshot(self) -> dict[int, Batch]:
        with self._lock:
            return {k: replace(b, files=list(b.files)) for k, b in self.batches.items()}

    def any_processed(self) -> bool:
        """Whether an interval has completed (the system is up, its first job done)."""
        with self._lock:
            return any(b.processing_ms is not None for b in self.batches.values())


@dataclass(frozen=True)
class Running:
    """A started system: ``ready()`` once it has started and is idle (the writer waits for
    it, so start-up is not charged to the warm-up), ``stop()`` to stop it."""

    stop: Callable[[], None]
    ready: Callable[[], bool]


# The probe's recorder. A module global on purpose: the DStream engines checkpoint their
# graph, output functions included, so the output functions below must pickle by reference
# (a module-level function of an importable module), not carry a recorder with a lock.
RECORDER = Recorder()


class WindowCounts:
    """Word counts over the last ``length`` intervals, kept with the inverse: each interval's
    counts are added when they enter and subtracted when they leave; zeros are dropped."""

    def __init__(self, length: int) -> None:
        if length < 1:
            raise ValueError(f"window of {length} intervals must hold at least one")
        self.length = length
        self.parts: deque[tuple[int, dict[str, int]]] = deque()
        self.totals: dict[str, int] = {}

    def add(self, interval: int, counts: dict[str, int]) -> None:
        totals = self.totals
        self.parts.append((interval, counts))
        for w, c in counts.items():
            totals[w] = totals.get(w, 0) + c
        while self.parts and self.parts[0][0] <= interval - self.length:
            for w, c in self.parts.popleft()[1].items():
                left = totals[w] - c
                if left:
                    totals[w] = left
                else:
                    del totals[w]


# -- dstream and pyspark.streaming: one program ------------------------------------------


def _time_ms(t: Any) -> int:
    from dstream.time import Time

    if isinstance(t, Time):
        return t.ms
    if isinstance(t, datetime):  # pyspark.streaming's foreachRDD: a naive local datetime
        return round(t.timestamp() * 1000)
    return int(t.milliseconds())  # pyspark.streaming's listener: a JVM Time


def _emit(t: Any, result: Any) -> None:
    RECORDER.update(_time_ms(t), result=result, result_ms=now_ms())


def _output_count(t: Any, rdd: Any) -> None:
    _emit(t, rdd.count())


def _output_counts(t: Any, rdd: Any) -> None:
    _emit(t, dict(rdd.collect()))


def _output_top(t: Any, rdd: Any) -> None:
    _emit(t, [[w, c] for w, c in rdd.takeOrdered(TOP, key=lambda kv: (-kv[1], kv[0]))])


def _output_lengths(t: Any, rdd: Any) -> None:
    _emit(t, rdd.map(len).sum())


def _window(pairs: Any, interval_s: float) -> Any:
    return pairs.reduceByKeyAndWindow(
        operator.add, operator.sub, WINDOW_S, interval_s, filterFunc=lambda kv: kv[1] > 0
    )


def dstream_columnar_program(ssc: Any, directory: str, workload: str, interval_s: float) -> Any:
    """The same workloads on dstream's columnar fast path (``textBatchStream``): records stay
    in Arrow arrays until they are counted; returns the input stream."""
    batches = ssc.textBatchStream(directory)
    if workload == "grep":
        batches.contains(PATTERN).dstream.foreachRDD(_output_lengths)
        return batches.dstream
    counts = batches.words().countByValueAndWindow(WINDOW_S, interval_s)
    counts.foreachRDD(_output_counts if workload == "wordcount" else _output_top)
    return batches.dstream


def dstream_program(ssc: Any, directory: str, workload: str, interval_s: float) -> Any:
    """The per-record program both DStream engines run; returns its input stream."""
    lines = ssc.textFileStream(directory)
    if workload == "grep":
        pattern = PATTERN
        lines.filter(lambda line: pattern in line).foreachRDD(_output_count)
        return lines
    counts = _window(lines.flatMap(lambda line: line.split()).map(lambda w: (w, 1)), interval_s)
    counts.foreachRDD(_output_counts if workload == "wordcount" else _output_top)
    return lines


def start_dstream_engine(
    system: str, sc: Any, directory: str, work: Path, workload: str, interval_ms: int
) -> Running:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        ours = system.startswith("dstream")
        engine: Any = import_module("dstream" if ours else "pyspark.streaming")
        ssc = engine.StreamingContext(sc, interval_ms / 1000)
    ssc.checkpoint(str(work / "checkpoint"))  # pyspark.streaming requires it for the inverse
    program = dstream_columnar_program if system == "dstream" else dstream_program
    lines = program(ssc, directory, workload, interval_ms / 1000)

    class Listener(engine.StreamingListener):
        def onBatchCompleted(self, batchCompleted: Any) -> None:
            info = batchCompleted.batchInfo()
            t = info.batchTime()
            if ours:
                paths = list(lines._node._batch_files.get(t, []))
            else:  # FileInputDStream reports its files as the input's description
                paths = [
                    p
                    for sii in info.streamIdToInputInfo().values()
                    for p in (sii.metadataDescription() or "").split("\n")
                    if p
                ]
            RECORDER.update(
                _time_ms(t),
                time_ms=_time_ms(t),
                processing_ms=float(info.processingDelay()),
                files=[p.rsplit("/", 1)[-1] for p in paths],
            )

    ssc.addStreamingListener(Listener())
    ssc.start()
    return Running(
        stop=lambda: ssc.stop(stopSparkContext=True, stopGraceFully=False),
        ready=RECORDER.any_processed,  # the first (empty) interval completed
    )


# -- Structured Streaming -----------------------------------------------------------------


def start_structured(
    sc: Any, directory: str, work: Path, workload: str, interval_ms: int
) -> Running:
    """``readStream.text`` + ``foreachBatch`` with a processing-time trigger of the interval.

    Grep is one DataFrame count per batch. For the 30 s window, Structured Streaming offers
    ``groupBy(window(ts, "30 s", slide))`` over an event- or processing-time column, which
    assigns every record to 30 / slide windows (no inverse function); no output mode gives
    the whole window every interval: update mode emits only the rows a batch touched,
    complete mode every window ever seen, and append mode (with a watermark) each window
    once, but only in a later batch whose data moved the watermark past the window's end
    (never, for the last windows, once input stops). BENCHMARKS.md has the details. So the
    window is kept like a user would in ``foreachBatch``: the
    batch's word counts are a DataFrame aggregation collected to the driver, and the window
    is a ring of per-interval counts with the inverse (:class:`WindowCounts`), keyed by the
    interval in which the batch ran (Structured Streaming runs no batch for an interval
    without new files).
    """
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as sf
    from pyspark.sql.streaming import StreamingQueryListener

    spark = SparkSession(sc)
    window = WindowCounts(WINDOW_S * 1000 // interval_ms)
    checkpoint = work / "checkpoint"

    def run_batch(df: Any, batch_id: int) -> None:
        started = now_ms()
        result: Any
        if workload == "grep":
            result = df.where(sf.col("value").contains(PATTERN)).count()
        else:
            words = df.select(sf.explode(sf.split("value", " ")).alias("word"))
            rows = words.where(sf.col("word") != "").groupBy("word").count().collect()
            window.add(started // interval_ms, {r[0]: r[1] for r in rows})
            result = dict(window.totals) if workload == "wordcount" else top(window.totals)
        RECORDER.update(batch_id, result=result, result_ms=now_ms())

    class Progress(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            p = event.progress
            started = datetime.fromisoformat(p.timestamp.replace("Z", "+00:00"))
            RECORDER.update(
                p.batchId,
                time_ms=round(started.timestamp() * 1000),
                processing_ms=float(p.durationMs.get("triggerExecution", 0)),
                # Read here, off the batch, so the probe sees during the run which files
                # have their result (its warm-up waits for that).
                files=structured_batch_files(checkpoint, p.batchId).get(p.batchId, []),
            )

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            pass

    spark.streams.addListener(Progress())
    query = (
        spark.readStream.text(directory)
        .writeStream.foreachBatch(run_batch)
        .trigger(processingTime=f"{interval_ms} milliseconds")
        .option("checkpointLocation", str(checkpoint))
        .start()
    )

    def stop() -> None:
        query.stop()
        # The file source's log says exactly which files each batch read.
        for batch_id, names in structured_batch_files(checkpoint).items():
            RECORDER.update(batch_id, files=names)
        spark.stop()

    def ready() -> bool:
        # No batch runs without new files: ready once the query waits for data.
        status = query.status
        return not status["isTriggerActive"] and status["message"].startswith("Waiting for")

    return Running(stop, ready)


def structured_batch_files(checkpoint: Path, batch_id: int | None = None) -> dict[int, list[str]]:
    """``{batch id: file names}`` from a file source's metadata log (``sources/0/N`` and the
    compacted ``N.compact``: a version line, then one JSON object per file); only batch
    ``batch_id``'s log file if given."""
    out: dict[int, list[str]] = {}
    log = checkpoint / "sources" / "0"
    if batch_id is not None:
        entries = [log / str(batch_id), log / f"{batch_id}.compact"]
    else:
        entries = sorted(log.iterdir()) if log.is_dir() else []
    for entry in entries:
        if entry.name.startswith(".") or not entry.is_file():
            continue
        for line in entry.read_text().splitlines():
            if line.startswith("{"):
                record = json.loads(line)
                name = record["path"].rsplit("/", 1)[-1]
                names = out.setdefault(int(record["batchId"]), [])
                if name not in names:
                    names.append(name)
    return out


# -- pyarrow, one core --------------------------------------------------------------------


def start_pyarrow(directory: str, workload: str, interval_ms: int) -> Running:
    """Every interval boundary (multiples of the interval in epoch time, like the Spark
    timers), read the files renamed in since the last one and compute the result; an
    interval that overruns delays the next, which then starts at once (a queue, as in the
    DStream engines)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyarrow import csv

    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    read_options = csv.ReadOptions(column_names=["line"], use_threads=False)
    parse_options = csv.ParseOptions(delimiter="\x1f", quote_char=False, escape_char=False)
    convert_options = csv.ConvertOptions(column_types={"line": pa.string()})
    window = WindowCounts(WINDOW_S * 1000 // interval_ms)
    stopping = threading.Event()
    seen: set[str] = set()

    def interval(batch_ms: int) -> None:
        started = now_ms()
        names = sorted(
            e.name
            for e in os.scandir(directory)
            if e.name[0] not in "._" and e.name not in seen and e.is_file()
        )
        seen.update(names)
        columns = [
            csv.read_csv(
                os.path.join(directory, name),
                read_options=read_options,
                parse_options=parse_options,
                convert_options=convert_options,
            ).column("line")
            for name in names
        ]
        lines = pa.chunked_array([c for col in columns for c in col.chunks], type=pa.string())
        result: Any
        if workload == "grep":
            result = pc.sum(pc.match_substring(lines, PATTERN)).as_py() or 0
        else:
            counts: dict[str, int] = {}
            if len(lines):
                words = pc.list_flatten(pc.ascii_split_whitespace(lines))
                words = pc.filter(words, pc.not_equal(words, ""))
                vc = pc.value_counts(words)
                counts = dict(zip(vc.field(0).to_pylist(), vc.field(1).to_pylist(), strict=True))
            window.add(batch_ms // interval_ms, counts)
            result = dict(window.totals) if workload == "wordcount" else top(window.totals)
        done = now_ms()
        RECORDER.update(
            batch_ms,
            time_ms=batch_ms,
            processing_ms=float(done - started),
            result=result,
            result_ms=done,
            files=names,
        )

    def run() -> None:
        batch_ms = (now_ms() // interval_ms + 1) * interval_ms
        while not stopping.wait(max(0.0, batch_ms / 1000 - time.time())):
            interval(batch_ms)
            batch_ms += interval_ms

    thread = threading.Thread(target=run, name="pyarrow-reference", daemon=True)
    thread.start()

    def stop() -> None:
        stopping.set()
        thread.join()

    return Running(stop, RECORDER.any_processed)


# -- one entry point ----------------------------------------------------------------------


def spark_conf(master: str, system: str = "dstream") -> Any:
    """The SparkConf every Spark-based system gets: dstream's recommended settings, no UI
    (a probe needs no port), and as many SQL shuffle partitions as cores, which is what
    reduceByKey uses in the DStream engines (Spark SQL's default is 200 tiny tasks). The one
    difference: the peers run PySpark's own Python worker daemon, not dstream's
    (``dstream.tasks.daemon``, which is dstream's code, not a Spark setting)."""
    cores = master.removeprefix("local[").removesuffix("]")
    conf = bench_conf(
        "dstream-bench-throughput",
        master,
        spark__ui__enabled="false",
        spark__sql__shuffle__partitions=cores if cores.isdigit() else "2",
    )
    if not system.startswith("dstream"):
        conf.set("spark.python.daemon.module", "pyspark.daemon")
    return conf


def start_system(
    system: str, workload: str, directory: str, work: Path, interval_ms: int, master: str
) -> Running:
    """Start ``system`` on ``workload`` over ``directory``. Results go to :data:`RECORDER`."""
    if system not in SYSTEMS:
        raise ValueError(f"system {system!r} is not one of {', '.join(SYSTEMS)}")
    if workload not in WORKLOADS:
        raise ValueError(f"workload {workload!r} is not one of {', '.join(WORKLOADS)}")
    if system == "pyarrow":
        return start_pyarrow(directory, workload, interval_ms)
    from pyspark import SparkContext

    sc = SparkContext(conf=spark_conf(master, system))
    sc.setLogLevel("ERROR")
    if system == "structured":
        return start_structured(sc, directory, work, workload, interval_ms)
    return start_dstream_engine(system, sc, directory, work, workload, interval_ms)
