"""StreamingContext: where a streaming program declares its inputs, and what starts, stops and
waits for it. The same names and arguments as ``pyspark.streaming.StreamingContext``; a
program written for pyspark.streaming runs here by changing its imports.

>>> ssc = StreamingContext(sc, 1)          # doctest: +SKIP
>>> lines = ssc.rateStream(1000)           # doctest: +SKIP
>>> lines.flatMap(str.split).countByValue().pprint()  # doctest: +SKIP
>>> ssc.start(); ssc.awaitTerminationOrTimeout(10); ssc.stop()  # doctest: +SKIP
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from dstream import shutdown
from dstream.api.columnar import BatchStream
from dstream.clock import Clock, default_clock
from dstream.dstream import DStream, handle_for, node_of
from dstream.functions import UserFunction, call_site, check_callable
from dstream.functions import positional_arity as _arity
from dstream.jvm import resolve_hot_classes
from dstream.listener import StreamingListener
from dstream.scheduler.engine import Engine
from dstream.scheduler.recovery import recover, set_up
from dstream.scheduler.replay_clock import replay
from dstream.settings import StreamingSettings
from dstream.sources.files import (
    FileInputDStream,
    binary_records_reader,
    check_directory,
    text_batches_reader,
)
from dstream.sources.queue import QueueInputDStream
from dstream.sources.rate import RateInputDStream
from dstream.sources.socket import SocketInputDStream
from dstream.storage.taskfs import task_files_for
from dstream.streams.base import DStreamCore
from dstream.streams.transformed import TransformedDStream, UnionDStream
from dstream.time import Time, to_duration
from dstream.timetext import parse_when
from dstream.versions import check_pyspark, default_workers_python

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext

    from dstream.scheduler.monitor import ExecutorMonitor
    from dstream.scheduler.replay_clock import ReplayReport
    from dstream.streams.quarantine import QuarantinedRecord

__all__ = ["StreamingContext"]

# The checkpoint directory of contexts that set none: set only by `dstream run --checkpoint`,
# in the context its program runs in.
_PROGRAM_CHECKPOINT: ContextVar[str | None] = ContextVar("dstream_checkpoint", default=None)


def programs_checkpoint(directory: str) -> None:
    """StreamingContexts created later in this context check-point to ``directory`` unless
    they call ``ssc.checkpoint()`` themselves (``dstream run --checkpoint``)."""
    _PROGRAM_CHECKPOINT.set(directory)


# Started and not yet stopped, oldest first (StreamingContext.getActive).
_running: weakref.WeakValueDictionary[int, StreamingContext] = weakref.WeakValueDictionary()


def _nodes_of(dstreams: Iterable[object], what: str) -> list[DStreamCore[Any]]:
    """The graph nodes behind the user's streams given to ``what``."""
    nodes = []
    for stream in dstreams:
        node = node_of(stream)
        if node is None:
            raise TypeError(f"{what}() takes DStreams, got {type(stream).__name__} {stream!r}")
        nodes.append(node)
    return nodes


class StreamingContext:
    """The entry point of a streaming program.

    ``batchDuration`` is seconds (int/float, as in PySpark), a string such as ``"500ms"`` or
    ``"2s"``, or a :class:`dstream.Duration`. ``clock`` (default: the system clock) and
    ``settings`` are keyword-only.
    """

    def __init__(
        self,
        sparkContext: SparkContext,
        batchDuration: object = None,
        *,
        clock: Clock | None = None,
        settings: StreamingSettings | None = None,
    ) -> None:
        from pyspark import SparkContext, __version__

        check_pyspark(__version__)
        if not isinstance(sparkContext, SparkContext):
            raise TypeError(
                f"StreamingContext needs a pyspark.SparkContext, got "
                f"{type(sparkContext).__name__}; create one with SparkContext(conf=...) or "
                "SparkSession.builder.getOrCreate().sparkContext"
            )
        if batchDuration is None:
            raise TypeError(
                "StreamingContext needs a batchDuration, e.g. StreamingContext(sc, 1) for 1 s "
                "or StreamingContext(sc, '500ms')"
            )
        default_workers_python(sparkContext)
        resolve_hot_classes(sparkContext)
        self._sc = sparkContext
        # Everything start() starts, and the graph the streams are built into.
        self._engine = Engine(
            self,
            sparkContext,
            to_duration(batchDuration, "batchDuration"),
            clock if clock is not None else default_clock(),
            settings if settings is not None else StreamingSettings(),
            _PROGRAM_CHECKPOINT.get(),
        )

    def __reduce__(self) -> Any:
        raise TypeError(
            "the StreamingContext was captured by a function that runs on executors; it exists "
            "only on the driver — use it in transform() or foreachRDD(), or pass values in "
            "with sc.broadcast()"
        )

    # ---- properties --------------------------------------------------------------------------
    @property
    def sparkContext(self) -> SparkContext:
        return self._sc

    def _check_can_add(self, what: str) -> None:
        self._engine.check_can_add(what)

    # ---- inputs ------------------------------------------------------------------------------
    def queueStream(
        self,
        rdds: Iterable[RDD[Any] | Iterable[Any]],
        oneAtATime: bool = True,
        default: RDD[Any] | Iterable[Any] | None = None,
    ) -> DStream[Any]:
        """A stream of the given RDDs (or lists): one per interval, or all of them in the first
        interval when ``oneAtATime`` is False; then ``default`` (or empty) every interval."""

        self._check_can_add("queueStream")
        if isinstance(rdds, str | bytes) or not isinstance(rdds, Iterable):
            raise TypeError(
                f"queueStream() takes a list of RDDs or of lists, got {type(rdds).__name__}"
            )
        return handle_for(QueueInputDStream(self._engine.graph, rdds, bool(oneAtATime), default))

    def textFileStream(self, directory: str) -> DStream[str]:
        """Lines of the files that appear in ``directory`` (local path or Hadoop URI such as
        ``hdfs://``). Write files elsewhere, or under a hidden name, and rename them in."""

        self._check_can_add("textFileStream")
        return handle_for(FileInputDStream(self._engine.graph, directory))

    def textBatchStream(self, directory: str) -> BatchStream:
        """The lines of ``textFileStream(directory)`` (the same files, the same lines), read
        by each task in its Python worker into Arrow string arrays: the columnar fast path.
        See :class:`dstream.api.columnar.BatchStream` for its operators."""

        self._check_can_add("textBatchStream")
        check_directory(directory, "textBatchStream")
        files = task_files_for(directory, self._sc, "the textBatchStream() directory")
        source = FileInputDStream(
            self._engine.graph,
            directory,
            reader=text_batches_reader(files),
            name="textBatchStream",
            batches=True,
        )
        return BatchStream(handle_for(source))

    def fileStream(
        self,
        directory: str,
        filterFunc: Callable[[str], bool] | None = None,
        newFilesOnly: bool = True,
    ) -> DStream[str]:
        """Like ``textFileStream``, with a path filter (``filterFunc(path) -> bool``, run on
        the driver) and the choice to also read files present at start
        (``newFilesOnly=False``)."""

        self._check_can_add("fileStream")
        if filterFunc is not None:
            check_callable(filterFunc, "fileStream", "filterFunc")
        return handle_for(
            FileInputDStream(
                self._engine.graph,
                directory,
                path_filter=filterFunc,
                new_files_only=newFilesOnly,
                name="fileStream",
            )
        )

    def binaryRecordsStream(self, directory: str, recordLength: int) -> DStream[bytes]:
        """Fixed-length binary records of the new files in ``directory``."""

        self._check_can_add("binaryRecordsStream")
        if isinstance(recordLength, bool) or not isinstance(recordLength, int) or recordLength < 1:
            raise ValueError(f"binaryRecordsStream() recordLength {recordLength!r} must be >= 1")
        return handle_for(
            FileInputDStream(
                self._engine.graph,
                directory,
                reader=binary_records_reader(recordLength),
                name="binaryRecordsStream",
            )
        )

    def socketTextStream(self, hostname: str, port: int, storageLevel: Any = None) -> DStream[str]:
        """Lines from a TCP server, read by a receiver thread on the driver (not durable)."""

        del storageLevel  # received lines live in the driver until their interval is cut
        self._check_can_add("socketTextStream")
        return handle_for(SocketInputDStream(self._engine.graph, hostname, port))

    def rateStream(
        self,
        recordsPerSecond: int,
        numPartitions: int | None = None,
        seed: int = 0,
        recordBytes: int = 100,
    ) -> DStream[str]:
        """Deterministic text records generated on the executors: ``recordsPerSecond``
        lines of ``recordBytes`` bytes, words from a fixed Zipf-distributed vocabulary."""

        self._check_can_add("rateStream")
        parts = numPartitions if numPartitions is not None else self._sc.defaultParallelism
        return handle_for(
            RateInputDStream(
                self._engine.graph,
                recordsPerSecond,
                num_partitions=parts,
                seed=seed,
                record_bytes=recordBytes,
            )
        )

    # ---- combining streams -------------------------------------------------------------------
    def union(self, *dstreams: DStream[Any]) -> DStream[Any]:
        """The records of all the given streams, interval by interval."""
        self._check_can_add("union")
        if not dstreams:
            raise ValueError("union() needs at least one stream; pass the streams to combine")
        nodes = _nodes_of(dstreams, "union")
        if len(nodes) == 1:
            return dstreams[0]
        return handle_for(UnionDStream(nodes))

    def transform(
        self, dstreams: list[DStream[Any]], transformFunc: Callable[..., RDD[Any]]
    ) -> DStream[Any]:
        """A stream whose RDD is ``transformFunc(rdds)`` or ``transformFunc(time, rdds)`` over
        the RDDs of ``dstreams`` of each interval (runs on the driver)."""
        self._check_can_add("transform")
        if not dstreams:
            raise ValueError("transform() needs at least one stream")
        check_callable(transformFunc, "transform", "transformFunc")
        uf = UserFunction("transform", call_site(), transformFunc, "driver")
        fn: Callable[[Time, list[RDD[Any]]], RDD[Any]] = (
            transformFunc if _arity(transformFunc) == 2 else lambda _t, rdds: transformFunc(rdds)
        )
        nodes = _nodes_of(dstreams, "transform")
        return handle_for(
            TransformedDStream(
                nodes, fn, name="transform", user_functions=[uf], driver_function=True
            )
        )

    # ---- settings ----------------------------------------------------------------------------
    def remember(self, duration: object) -> None:
        """Make every stream keep its RDDs for at least ``duration`` (seconds, '30s', ...)."""
        self._check_can_add("remember")
        self._engine.graph.remember(to_duration(duration, "remember duration"))

    def checkpoint(self, directory: str) -> None:
        """Where state checkpoints and driver metadata are written (local path or Hadoop URI).

        The directory is created now, as Spark's ``checkpoint()`` does (a program may list or
        remove it before ``start()``); nothing is written into it until ``start()``."""
        self._check_can_add("checkpoint")
        if not isinstance(directory, str) or not directory:
            raise ValueError(f"checkpoint() directory {directory!r} must be a non-empty path")
        self._engine.use_checkpoint_dir(directory)

    def addStreamingListener(self, streamingListener: StreamingListener) -> None:
        if not isinstance(streamingListener, StreamingListener):
            raise TypeError(
                f"addStreamingListener() needs a dstream.StreamingListener subclass instance, "
                f"got {type(streamingListener).__name__}"
            )
        self._engine.bus.add(streamingListener)

    # ---- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Validate the program and start generating one batch per interval."""
        self._engine.start(on_active=lambda: _running.__setitem__(self._engine.id, self))
        # Stopped at interpreter exit and on SIGTERM (gracefully if the conf asks).
        shutdown.register(lambda: list(_running.values()))

    @property
    def lastProgress(self) -> dict[str, Any] | None:
        """The progress record of the newest completed batch (None before the first), shaped
        like Structured Streaming's ``query.lastProgress``: see
        :mod:`dstream.scheduler.progress`."""
        return self._engine.progress.last

    @property
    def recentProgress(self) -> list[dict[str, Any]]:
        """The progress records of the last 100 completed batches, oldest first."""
        return self._engine.progress.recent

    def quarantined(self, since: object = None) -> list[QuarantinedRecord]:
        """The records set aside under ``StreamingSettings(bad_records="quarantine")`` (the
        newest 10,000 of this driver's run), oldest first; ``since``: only those of intervals
        from that time on (what ``stream.at()`` takes). With a checkpoint directory they are
        also in ``<checkpoint>/quarantine/`` (``dstream.read_quarantined(directory)``)."""
        graph = self._engine.graph
        if not graph.quarantine.active:
            raise ValueError(
                "quarantined(): this program runs with bad_records='fail' (a record whose "
                "function raises fails its interval); set StreamingSettings(bad_records="
                "'quarantine') to set such records aside instead"
            )
        when = None if since is None else parse_when(since, self._engine.clock.now(), "since")
        return graph.quarantine.records(when)

    @property
    def executor_monitor(self) -> ExecutorMonitor:
        """What each interval's tasks did and which executors straggle (needs the JVM shim)."""
        return self._engine.monitor_or_raise()

    # ---- recovery, replay and the running contexts --------------------------------------------
    @classmethod
    def getOrCreate(
        cls,
        checkpointPath: str,
        setupFunc: Callable[[], StreamingContext],
        sparkContext: SparkContext | None = None,
        *,
        rebuildGraph: bool = False,
        clock: Clock | None = None,
        settings: StreamingSettings | None = None,
    ) -> StreamingContext:
        """Resume the program whose metadata is in ``checkpointPath``, or create it with
        ``setupFunc()`` when there is none.

        A resumed program rebuilds its state from the last checkpoints, recomputes the
        intervals since them from durable input, runs every interval missed while the driver
        was down, and goes on. By default the saved program (graph and functions) runs; with
        ``rebuildGraph=True`` the program ``setupFunc()`` defines now runs instead, and the
        saved state is bound to its streams by name (``setName()``, or the operator and its
        rank), after checking that each is compatible.
        """
        from pyspark import SparkContext

        check_callable(setupFunc, "getOrCreate", "setupFunc")
        return recover(
            checkpointPath,
            setupFunc,
            sparkContext or SparkContext._active_spark_context,
            rebuild_graph=rebuildGraph,
            clock=clock,
            settings=settings,
            new_context=lambda sc, batch, clock, settings: cls(
                sc, batch, clock=clock, settings=settings
            ),
        )

    @classmethod
    def replay(
        cls,
        setupFunc: Callable[[], StreamingContext],
        begin: object,
        end: object,
        speed: object = "max",
    ) -> ReplayReport:
        """Run the program ``setupFunc()`` defines over input that already exists, for the
        intervals from ``begin`` to ``end`` (Times, datetimes, epoch seconds or
        ``"21:00"``-style text), as fast as the cluster completes them (``speed="max"``) or
        at a multiple of real time (``"1x"``, ``"10x"``); then stop it gracefully. Each file
        goes to the interval its modification time falls in, and outputs are committed as
        live: the same files give the same outputs, interval by interval. The program is the
        live one, unchanged; it must not give its StreamingContext a clock of its own."""

        check_callable(setupFunc, "replay", "setupFunc")
        return replay(setupFunc, begin, end, speed)

    @classmethod
    def getActiveOrCreate(
        cls, checkpointPath: str | None, setupFunc: Callable[[], StreamingContext]
    ) -> StreamingContext:
        """The running StreamingContext (started and not stopped) if there is one; otherwise
        ``getOrCreate(checkpointPath, setupFunc)``, or ``setupFunc()`` when ``checkpointPath``
        is None (as PySpark's)."""

        check_callable(setupFunc, "getActiveOrCreate", "setupFunc")
        active = cls.getActive()
        if active is not None:
            return active
        if checkpointPath is None:
            return set_up(setupFunc, None)
        return cls.getOrCreate(checkpointPath, setupFunc)

    @classmethod
    def getActive(cls) -> StreamingContext | None:
        """The StreamingContext started last and not stopped yet in this process, or None
        (as PySpark's; dstream lets several run at once over one SparkContext)."""
        running = list(_running.values())
        return max(running, key=lambda ssc: ssc._engine.id) if running else None

    def stop(self, stopSparkContext: bool = True, stopGraceFully: bool = False) -> None:
        """Stop generating batches. With ``stopGraceFully`` the batches already generated are
        finished first (up to ``settings.graceful_stop_timeout``); otherwise their jobs are
        cancelled. Stops the SparkContext too unless ``stopSparkContext=False``.

        Safe to call from several threads (the shell's Ctrl-D and the program's own stop): a
        call made while another is stopping the context waits for it to finish."""
        _running.pop(self._engine.id, None)
        self._engine.stop(bool(stopSparkContext), bool(stopGraceFully))

    def awaitTermination(self, timeout: float | None = None) -> None:
        """Wait until ``stop()`` (or ``timeout`` seconds); raise the error of a failed batch."""
        self.awaitTerminationOrTimeout(timeout)

    def awaitTerminationOrTimeout(self, timeout: float | None) -> bool:
        """Wait until stopped (True) or ``timeout`` seconds pass (False). If a batch failed,
        raise its :class:`dstream.errors.StreamingJobError` (later batches still run)."""
        if timeout is not None and (isinstance(timeout, bool) or timeout < 0):
            raise ValueError(f"timeout {timeout!r} must be a number of seconds >= 0 or None")
        return self._engine.await_termination(timeout)

    # ---- for tests, benchmarks and the shell ---------------------------------------------------
    def wait_for_batch(self, time: Time | int, timeout_s: float | None = 60.0) -> bool:
        """Block until the batch ending at ``time`` (and all before it) has completed and its
        metadata record is written. False on timeout; raises the HaltedError if the engine
        stopped generating intervals before that batch completed."""
        return self._engine.wait_for_batch(
            time if isinstance(time, Time) else Time(time), timeout_s
        )
