"""StreamingContext: where a streaming program declares its inputs, and what starts, stops and
waits for it. The same names and arguments as ``pyspark.streaming.StreamingContext``; a
program written for pyspark.streaming runs here by changing its imports.

>>> ssc = StreamingContext(sc, 1)          # doctest: +SKIP
>>> lines = ssc.rateStream(1000)           # doctest: +SKIP
>>> lines.flatMap(str.split).countByValue().pprint()  # doctest: +SKIP
>>> ssc.start(); ssc.awaitTerminationOrTimeout(10); ssc.stop()  # doctest: +SKIP
"""

from __future__ import annotations

import itertools
import logging
import shutil
import tempfile
import threading
import time as _time
import weakref
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from dstream import shutdown
from dstream.api.queries import TempViews, ViewRefresher
from dstream.clock import Clock, default_clock
from dstream.errors import ContextStateError, StreamingJobError
from dstream.functions import UserFunction, call_site, check_callable, check_picklable
from dstream.functions import positional_arity as _arity
from dstream.jvm import resolve_hot_classes
from dstream.listener import ListenerBus, StreamingListener, StreamingListenerStreamingStarted
from dstream.scheduler.checkpointer import Checkpointer
from dstream.scheduler.progress import ProgressTracker
from dstream.scheduler.recovery import failed_before, resume_time
from dstream.settings import StreamingSettings
from dstream.sparkconf import conf_flag, conf_number
from dstream.storage.journal import CheckpointDirectoryError
from dstream.streams.graph import DStreamGraph
from dstream.time import Duration, Time, to_duration
from dstream.versions import check_pyspark, default_workers_python, probe_executors

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext

    from dstream.api.columnar import BatchStream
    from dstream.dstream import DStream
    from dstream.scheduler.checkpointer import Checkpointer
    from dstream.scheduler.coordinator import BatchCoordinator
    from dstream.scheduler.monitor import ExecutorMonitor
    from dstream.scheduler.replay import ReplayReport
    from dstream.scheduler.scheduler import JobScheduler
    from dstream.scheduler.webui import StreamingTabFeed
    from dstream.storage.journal import JournalRecord, MetadataJournal
    from dstream.storage.ownership import Lease
    from dstream.streams.copartitioned import SectionMarks

__all__ = ["StreamingContext"]

log = logging.getLogger(__name__)

_ids = itertools.count()
# The checkpoint directory of contexts that set none: set only by `dstream run --checkpoint`,
# in the context its program runs in.
_PROGRAM_CHECKPOINT: ContextVar[str | None] = ContextVar("dstream_checkpoint", default=None)


def programs_checkpoint(directory: str) -> None:
    """StreamingContexts created later in this context check-point to ``directory`` unless
    they call ``ssc.checkpoint()`` themselves (``dstream run --checkpoint``)."""
    _PROGRAM_CHECKPOINT.set(directory)


# Started and not yet stopped, oldest first (StreamingContext.getActive).
_running: weakref.WeakValueDictionary[int, StreamingContext] = weakref.WeakValueDictionary()


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
        self._sc = sparkContext
        default_workers_python(sparkContext)
        resolve_hot_classes(sparkContext)
        self._batch_duration: Duration = to_duration(batchDuration, "batchDuration")
        self._clock: Clock = clock if clock is not None else default_clock()
        self._settings = settings if settings is not None else StreamingSettings()
        self._id = next(_ids)
        self._graph = DStreamGraph(self._batch_duration)
        self._bus = ListenerBus()
        self._state = "initialized"
        self._state_lock = threading.Condition()
        self._error: StreamingJobError | None = None
        self._scheduler: JobScheduler | None = None
        self._monitor: ExecutorMonitor | None = None
        self._web_ui: StreamingTabFeed | None = None  # the Spark UI's Streaming tab, metrics
        self._checkpoint_dir: str | None = _PROGRAM_CHECKPOINT.get()
        self._temp_storage: str | None = None
        self._section_marks: SectionMarks | None = None
        self._checkpointer: Checkpointer | None = None
        self._journal: MetadataJournal | None = None
        self._coordinator: BatchCoordinator | None = None
        # This driver's lease on the checkpoint directory (see dstream.storage.ownership).
        self._lease: Lease | None = None
        self._restored_from: JournalRecord | None = None
        # SQL views of createOrReplaceTempView, re-pointed as intervals complete.
        self._views = TempViews()
        self._bus.add(ViewRefresher(self._views))
        self._progress = ProgressTracker(self)
        self._bus.add(self._progress)

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
        if self._state != "initialized":
            raise ContextStateError(
                f"cannot add {what}() to a StreamingContext that is {self._state}; declare "
                "every stream and output operation before ssc.start()"
            )

    # ---- inputs ------------------------------------------------------------------------------
    def queueStream(
        self,
        rdds: Iterable[RDD[Any] | Iterable[Any]],
        oneAtATime: bool = True,
        default: RDD[Any] | Iterable[Any] | None = None,
    ) -> DStream[Any]:
        """A stream of the given RDDs (or lists): one per interval, or all of them in the first
        interval when ``oneAtATime`` is False; then ``default`` (or empty) every interval."""
        from dstream.sources.queue import QueueInputDStream

        self._check_can_add("queueStream")
        if isinstance(rdds, str | bytes) or not isinstance(rdds, Iterable):
            raise TypeError(
                f"queueStream() takes a list of RDDs or of lists, got {type(rdds).__name__}"
            )
        return QueueInputDStream(self, rdds, bool(oneAtATime), default)

    def textFileStream(self, directory: str) -> DStream[str]:
        """Lines of the files that appear in ``directory`` (local path or Hadoop URI such as
        ``hdfs://``). Write files elsewhere, or under a hidden name, and rename them in."""
        from dstream.sources.files import FileInputDStream

        self._check_can_add("textFileStream")
        return FileInputDStream(self, directory)

    def textBatchStream(self, directory: str) -> BatchStream:
        """The lines of ``textFileStream(directory)`` (the same files, the same lines), read
        by each task in its Python worker into Arrow string arrays: the columnar fast path.
        See :class:`dstream.api.columnar.BatchStream` for its operators."""
        from dstream.api.columnar import BatchStream
        from dstream.sources.files import FileInputDStream, check_directory, text_batches_reader
        from dstream.storage.taskfs import task_files_for

        self._check_can_add("textBatchStream")
        check_directory(directory, "textBatchStream")
        files = task_files_for(directory, self._sc, "the textBatchStream() directory")
        source = FileInputDStream(
            self,
            directory,
            reader=text_batches_reader(files),
            name="textBatchStream",
            batches=True,
        )
        return BatchStream(source)

    def fileStream(
        self,
        directory: str,
        filterFunc: Callable[[str], bool] | None = None,
        newFilesOnly: bool = True,
    ) -> DStream[str]:
        """Like ``textFileStream``, with a path filter (``filterFunc(path) -> bool``, run on
        the driver) and the choice to also read files present at start
        (``newFilesOnly=False``)."""
        from dstream.sources.files import FileInputDStream

        self._check_can_add("fileStream")
        if filterFunc is not None:
            check_callable(filterFunc, "fileStream", "filterFunc")
        return FileInputDStream(
            self, directory, path_filter=filterFunc, new_files_only=newFilesOnly, name="fileStream"
        )

    def binaryRecordsStream(self, directory: str, recordLength: int) -> DStream[bytes]:
        """Fixed-length binary records of the new files in ``directory``."""
        from dstream.sources.files import FileInputDStream, binary_records_reader

        self._check_can_add("binaryRecordsStream")
        if isinstance(recordLength, bool) or not isinstance(recordLength, int) or recordLength < 1:
            raise ValueError(f"binaryRecordsStream() recordLength {recordLength!r} must be >= 1")
        return FileInputDStream(
            self, directory, reader=binary_records_reader(recordLength), name="binaryRecordsStream"
        )

    def socketTextStream(self, hostname: str, port: int, storageLevel: Any = None) -> DStream[str]:
        """Lines from a TCP server, read by a receiver thread on the driver (not durable)."""
        from dstream.sources.socket import SocketInputDStream

        del storageLevel  # received lines live in the driver until their interval is cut
        self._check_can_add("socketTextStream")
        return SocketInputDStream(self, hostname, port)

    def rateStream(
        self,
        recordsPerSecond: int,
        numPartitions: int | None = None,
        seed: int = 0,
        recordBytes: int = 100,
    ) -> DStream[str]:
        """Deterministic text records generated on the executors: ``recordsPerSecond``
        lines of ``recordBytes`` bytes, words from a fixed Zipf-distributed vocabulary."""
        from dstream.sources.rate import RateInputDStream

        self._check_can_add("rateStream")
        parts = numPartitions if numPartitions is not None else self._sc.defaultParallelism
        return RateInputDStream(
            self, recordsPerSecond, num_partitions=parts, seed=seed, record_bytes=recordBytes
        )

    # ---- combining streams -------------------------------------------------------------------
    def union(self, *dstreams: DStream[Any]) -> DStream[Any]:
        """The records of all the given streams, interval by interval."""
        from dstream.streams.transformed import UnionDStream

        self._check_can_add("union")
        if not dstreams:
            raise ValueError("union() needs at least one stream; pass the streams to combine")
        if len(dstreams) == 1:
            return dstreams[0]
        return UnionDStream(list(dstreams))

    def transform(
        self, dstreams: list[DStream[Any]], transformFunc: Callable[..., RDD[Any]]
    ) -> DStream[Any]:
        """A stream whose RDD is ``transformFunc(rdds)`` or ``transformFunc(time, rdds)`` over
        the RDDs of ``dstreams`` of each interval (runs on the driver)."""
        from dstream.streams.transformed import TransformedDStream

        self._check_can_add("transform")
        if not dstreams:
            raise ValueError("transform() needs at least one stream")
        check_callable(transformFunc, "transform", "transformFunc")
        uf = UserFunction("transform", call_site(), transformFunc, "driver")
        fn: Callable[[Time, list[RDD[Any]]], RDD[Any]] = (
            transformFunc if _arity(transformFunc) == 2 else lambda _t, rdds: transformFunc(rdds)
        )
        return TransformedDStream(
            list(dstreams), fn, name="transform", user_functions=[uf], driver_function=True
        )

    # ---- settings ----------------------------------------------------------------------------
    def remember(self, duration: object) -> None:
        """Make every stream keep its RDDs for at least ``duration`` (seconds, '30s', ...)."""
        self._check_can_add("remember")
        self._graph.remember(to_duration(duration, "remember duration"))

    def checkpoint(self, directory: str) -> None:
        """Where state checkpoints and driver metadata are written (local path or Hadoop URI).

        The directory is created now, as Spark's ``checkpoint()`` does (a program may list or
        remove it before ``start()``); nothing is written into it until ``start()``."""
        self._check_can_add("checkpoint")
        if not isinstance(directory, str) or not directory:
            raise ValueError(f"checkpoint() directory {directory!r} must be a non-empty path")
        self._use_checkpoint_dir(directory)

    def _use_checkpoint_dir(self, directory: str) -> None:
        """Bind this program to ``directory``, creating it (and its parents) if missing."""
        from dstream.storage.filesystem import filesystem_for

        try:
            filesystem_for(directory, self._sc).mkdirs(directory)
        except OSError as exc:
            raise CheckpointDirectoryError(
                f"checkpoint directory {directory} cannot be created: {exc}; choose a "
                "directory this program's user can write"
            ) from exc
        self._checkpoint_dir = directory

    def addStreamingListener(self, streamingListener: StreamingListener) -> None:
        if not isinstance(streamingListener, StreamingListener):
            raise TypeError(
                f"addStreamingListener() needs a dstream.StreamingListener subclass instance, "
                f"got {type(streamingListener).__name__}"
            )
        self._bus.add(streamingListener)

    # ---- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        """Validate the program and start generating one batch per interval."""
        with self._state_lock:
            if self._state == "active":
                raise ContextStateError(
                    "start() was called on a StreamingContext that is already running; "
                    "call start() once"
                )
            if self._state in ("stopping", "stopped"):
                raise ContextStateError(
                    "start() was called on a stopped StreamingContext; it cannot be restarted — "
                    "create a new StreamingContext and define the streams again"
                )
            self._graph.validate()
            # A misspelt spark.streaming.stopGracefullyOnShutdown fails here, not at exit.
            shutdown.graceful_on_shutdown(
                self._sc.getConf().get(shutdown.STOP_GRACEFULLY_ON_SHUTDOWN)
            )
            check_picklable(self._graph.user_functions())
            probe_executors(self._sc)  # executors elsewhere run the driver's dstream
            self._check_max_history()
            if any(s._needs_storage for s in self._graph.streams):
                root = self._storage_root()
                for stream in self._graph.streams:
                    stream._prepare_storage(root)
            now = self._clock.now()
            if self._restored_from is not None:
                zero, first = resume_time(self._restored_from)
            else:
                first = now.floor(self._batch_duration) + self._batch_duration
                zero = first - self._batch_duration
            try:
                self._start_engine(now, zero, first)
            except BaseException:
                self._undo_start()
                raise
            self._state = "active"
            _running[self._id] = self
        # Stopped at interpreter exit and on SIGTERM (gracefully if the conf asks).
        shutdown.register(lambda: list(_running.values()))

    def _start_engine(self, now: Time, zero: Time, first: Time) -> None:
        """start()'s work once the program is checked: the journal and its lease, the
        executor monitor and Streaming tab, the coordinator, checkpointer, listener bus,
        sources and scheduler, which generates ``first`` and every interval after it."""
        from dstream.scheduler.checkpointer import Checkpointer
        from dstream.scheduler.coordinator import BatchCoordinator
        from dstream.scheduler.events import CheckpointFailed, CheckpointWritten
        from dstream.scheduler.scheduler import JobScheduler
        from dstream.scheduler.webui import attach_web_ui
        from dstream.storage.ownership import claim

        self._graph.start(zero)
        journal = self._open_journal() if self._checkpoint_dir is not None else None
        if journal is not None:
            self._give_rdds_the_checkpoint_dir()
        self._lease = None if journal is None else claim(journal.fs, journal.directory)
        self._monitor = self._start_monitor()
        self._web_ui = attach_web_ui(self, self._monitor)
        self._coordinator = BatchCoordinator(self, journal, self._lease, self._monitor)
        scheduler = JobScheduler(
            self._graph,
            self._sc,
            clock=self._clock,
            settings=self._settings,
            bus=self._bus,
            on_error=self._report_error,
            group_prefix=self._job_group_prefix,
            hooks=self._coordinator,
            failed_before=failed_before(self._restored_from),
            lease=self._lease,
        )
        if any(s._is_state for s in self._graph.streams):
            self._checkpointer = Checkpointer(
                self._sc,
                self._job_group_prefix,
                lambda stream, time, s: scheduler.post(CheckpointWritten(stream, time, s)),
                lambda stream, time, e, n: scheduler.post(CheckpointFailed(stream, time, e, n)),
                retries=self._settings.checkpoint_retries,
            )
            self._checkpointer.start()
        self._start_elastic()
        self._bus.start()
        self._bus.post("onStreamingStarted", StreamingListenerStreamingStarted(now.ms))
        for source in self._graph.inputs:
            source._start()
        if self._restored_from is None:
            self._coordinator.program_started()
        self._scheduler = scheduler
        scheduler.start(first)

    def _undo_start(self) -> None:
        """A start() that failed part-way (a receiver's port taken, a lease refused...) stops
        what it had started (threads, sources, the Streaming tab) and leaves the context
        stopped: the error is the user's to fix, in a new StreamingContext."""
        parts: list[tuple[str, Callable[[], object]]] = []
        if self._scheduler is not None:
            scheduler = self._scheduler
            parts.append(("scheduler", lambda: scheduler.stop(graceful=False)))
        if self._checkpointer is not None:
            checkpointer = self._checkpointer
            parts.append(("checkpointer", lambda: checkpointer.stop(graceful=False)))
        parts += [(f"input {s._id}", s._stop) for s in self._graph.inputs]
        if self._monitor is not None:
            parts.append(("executor monitor", self._monitor.stop))
        lease, coordinator = self._lease, self._coordinator
        fresh = self._restored_from is None
        if lease is not None and fresh and (coordinator is None or not coordinator.records_written):
            parts.append(("lease of a program never recorded", lease.release))
        parts.append(("listener bus", self._bus.stop))
        if self._web_ui is not None:
            parts.append(("Streaming tab", self._web_ui.stop))
        for what, stop in parts:
            try:
                stop()
            except Exception:
                log.debug("stopping the %s after a failed start()", what, exc_info=True)
        if self._temp_storage is not None:
            shutil.rmtree(self._temp_storage, ignore_errors=True)
            self._temp_storage = None
        self._state = "stopped"

    def _give_rdds_the_checkpoint_dir(self) -> None:
        """As Spark's ``checkpoint()``: RDDs the program checkpoints itself (``rdd.checkpoint()``
        in ``foreachRDD`` or ``transform``) are written under the checkpoint directory, in
        ``rdd-checkpoints/`` — unless the SparkContext has a checkpoint directory already
        (the program's own choice, or another running context's), which is kept."""
        from dstream.storage.filesystem import join

        assert self._checkpoint_dir is not None
        if self._sc.getCheckpointDir() is None:
            self._sc.setCheckpointDir(join(self._checkpoint_dir, "rdd-checkpoints"))

    def _start_monitor(self) -> ExecutorMonitor | None:
        """The JVM shim's task events, read by the executor monitor (per-interval task
        statistics, stragglers, executor avoidance)."""
        from dstream.scheduler.monitor import (
            ExecutorMonitor,
            SparkExecutorControl,
            supports_executor_control,
        )
        from dstream.scheduler.shim import ShimMissingError, TaskEventFeed

        policy = self._settings.executor_avoidance
        controls = [
            name
            for name, value in (
                ("executor_avoidance", policy),
                ("elastic", self._settings.elastic),
            )
            if value is not None
        ]
        if self._settings.elastic is not None and conf_flag(
            self._sc.getConf(), "spark.dynamicAllocation.enabled"
        ):
            raise ValueError(
                "settings.elastic decides the executors, and so does Spark's dynamic "
                "allocation (spark.dynamicAllocation.enabled=true): two controllers would "
                "undo each other; set spark.dynamicAllocation.enabled=false, or elastic=None "
                "(Spark then decides, and stream.rescale(n) still changes a state's partitions)"
            )
        for name in controls:
            if not supports_executor_control(self._sc.master or ""):
                raise ValueError(
                    f"settings.{name} needs executors in JVMs of their own, but the "
                    f"master is {self._sc.master!r} (tasks run inside the driver); use "
                    f"local-cluster[N,cores,MB] or a cluster, or set {name}=None"
                )
        try:
            feed = TaskEventFeed.attach(self._sc)
        except ShimMissingError as exc:
            if controls:
                raise ShimMissingError(exc.path, needed_by=f"settings.{controls[0]}") from None
            log.warning(
                "%s. Running without per-interval task statistics and straggler tracking, "
                "and without the Spark UI's Streaming tab and dstream's metrics.",
                exc,
            )
            return None
        monitor = ExecutorMonitor(
            feed,
            self._job_group_prefix,
            policy=policy,
            control=SparkExecutorControl(self._sc) if controls else None,
        )
        monitor.start()
        return monitor

    def _start_elastic(self) -> None:
        """Backpressure and the elastic policy (dstream.scheduler.elastic), a listener on
        completed intervals; pyspark.streaming's spark.streaming.backpressure.* settings
        turn backpressure on too."""
        from dstream.scheduler.elastic import ElasticController

        conf = self._sc.getConf()
        backpressure = self._settings.backpressure or conf_flag(
            conf, "spark.streaming.backpressure.enabled"
        )
        if not backpressure and self._settings.elastic is None:
            return
        min_rate = conf_number(conf, "spark.streaming.backpressure.pid.minRate", 100.0)
        if backpressure and conf.get("spark.streaming.backpressure.initialRate") is not None:
            initial = conf_number(conf, "spark.streaming.backpressure.initialRate", 1.0)
            for source in self._graph.inputs:
                source._set_rate_limit(initial)
        controller = ElasticController(
            self._graph,
            self._monitor,
            self._settings.elastic,
            backpressure=backpressure,
            min_rate=min_rate,
            checkpointer=self._checkpointer,
        )
        # First: progress records show the rate and the step of their own interval.
        self._bus.add(controller, first=True)

    @property
    def lastProgress(self) -> dict[str, Any] | None:
        """The progress record of the newest completed batch (None before the first), shaped
        like Structured Streaming's ``query.lastProgress``: see
        :mod:`dstream.scheduler.progress`."""
        return self._progress.last

    @property
    def recentProgress(self) -> list[dict[str, Any]]:
        """The progress records of the last 100 completed batches, oldest first."""
        return self._progress.recent

    @property
    def executor_monitor(self) -> ExecutorMonitor:
        """What each interval's tasks did and which executors straggle (needs the JVM shim)."""
        if self._monitor is None:
            raise ContextStateError(
                "the executor monitor runs once the context is started with the JVM shim "
                "built (`make shim`)"
            )
        return self._monitor

    # ---- checkpoints and the metadata journal -----------------------------------------------
    def _check_max_history(self) -> None:
        limit = self._settings.max_history
        if limit is None:
            return
        for stream in self._graph.streams:
            needed = stream._history_needed()
            if needed is not None and limit <= needed[0]:
                raise ValueError(
                    f"settings.max_history {limit} must be longer than the {needed[1]} "
                    f"{needed[0]} of {stream._label}: the input since its last checkpoint, or "
                    "its window, must still be there to be recomputed; raise max_history or "
                    "shorten that interval"
                )

    def _open_journal(self) -> MetadataJournal:
        """The journal of this program's checkpoint directory: the one getOrCreate() read,
        or a new one, which must not hold another program's records."""
        from dstream.storage.filesystem import filesystem_for
        from dstream.storage.journal import MetadataJournal

        assert self._checkpoint_dir is not None
        journal = self._journal
        if journal is None:
            fs = filesystem_for(self._checkpoint_dir, self._sc)
            journal = MetadataJournal(fs, self._checkpoint_dir)
            journal.check_directory(create=True)
            if journal.read_latest() is not None:
                raise CheckpointDirectoryError(
                    f"checkpoint directory {self._checkpoint_dir} already holds the metadata "
                    "of a streaming program; resume it with StreamingContext.getOrCreate("
                    f"{self._checkpoint_dir!r}, setup), or choose a new directory"
                )
        journal.delete_stale_temporaries()
        self._journal = journal
        return journal

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

        from dstream.scheduler.recovery import recover

        check_callable(setupFunc, "getOrCreate", "setupFunc")
        return recover(
            checkpointPath,
            setupFunc,
            sparkContext or SparkContext._active_spark_context,
            rebuild_graph=rebuildGraph,
            clock=clock,
            settings=settings,
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
        from dstream.scheduler.replay import replay

        check_callable(setupFunc, "replay", "setupFunc")
        return replay(setupFunc, begin, end, speed)

    @classmethod
    def getActiveOrCreate(
        cls, checkpointPath: str | None, setupFunc: Callable[[], StreamingContext]
    ) -> StreamingContext:
        """The running StreamingContext (started and not stopped) if there is one; otherwise
        ``getOrCreate(checkpointPath, setupFunc)``, or ``setupFunc()`` when ``checkpointPath``
        is None (as PySpark's)."""
        from dstream.scheduler.recovery import set_up

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
        return max(running, key=lambda ssc: ssc._id) if running else None

    def stop(self, stopSparkContext: bool = True, stopGraceFully: bool = False) -> None:
        """Stop generating batches. With ``stopGraceFully`` the batches already generated are
        finished first (up to ``settings.graceful_stop_timeout``); otherwise their jobs are
        cancelled. Stops the SparkContext too unless ``stopSparkContext=False``.

        Safe to call from several threads (the shell's Ctrl-D and the program's own stop): a
        call made while another is stopping the context waits for it to finish."""
        with self._state_lock:
            was = self._state
            if was == "stopping":
                self._state_lock.wait_for(lambda: self._state == "stopped")
                return
            self._state = "stopping" if was == "active" else "stopped"
        _running.pop(self._id, None)
        if was == "active":
            assert self._scheduler is not None
            self._scheduler.stop(graceful=bool(stopGraceFully))
            if self._checkpointer is not None:
                self._checkpointer.stop(graceful=bool(stopGraceFully))
            for source in self._graph.inputs:
                source._stop()
            if self._monitor is not None:
                self._monitor.stop()
            self._bus.stop()
            if self._web_ui is not None:
                self._web_ui.stop()
        if self._temp_storage is not None:
            shutil.rmtree(self._temp_storage, ignore_errors=True)
            self._temp_storage = None
        if stopSparkContext and was != "stopped":
            self._sc.stop()
        elif was == "active":
            self._graph.release()
            if self._section_marks is not None:
                self._section_marks.release()
        with self._state_lock:
            self._state = "stopped"  # awaitTermination returns once everything has stopped
            self._state_lock.notify_all()

    @property
    def _marks(self) -> SectionMarks:
        """Cached one-mark-per-partition RDDs for sectioned unions of keyed state."""
        if self._section_marks is None:
            from dstream.streams.copartitioned import SectionMarks

            self._section_marks = SectionMarks(self._sc)
        return self._section_marks

    @property
    def _job_group_prefix(self) -> str:
        """Spark job groups of this context's jobs start with this."""
        return f"dstream-{self._sc.applicationId}-{self._id}"

    def _storage_root(self) -> str:
        """Where streams keep their own files: the checkpoint directory, or, when none is set
        and every executor shares this machine's file system (local masters), a temporary
        directory removed at stop()."""
        if self._checkpoint_dir is not None:
            return self._checkpoint_dir
        master = self._sc.master or ""
        if not master.startswith("local"):
            raise ValueError(
                f"track() keeps state snapshots that every executor reads, and master {master!r} "
                "runs executors on other machines; call ssc.checkpoint(directory) with a "
                "directory they all reach before start()"
            )
        if self._temp_storage is None:
            self._temp_storage = tempfile.mkdtemp(prefix="dstream-state-")
        return self._temp_storage

    def _report_error(self, error: StreamingJobError) -> None:
        with self._state_lock:
            self._error = error
            self._state_lock.notify_all()

    def awaitTermination(self, timeout: float | None = None) -> None:
        """Wait until ``stop()`` (or ``timeout`` seconds); raise the error of a failed batch."""
        self.awaitTerminationOrTimeout(timeout)

    def awaitTerminationOrTimeout(self, timeout: float | None) -> bool:
        """Wait until stopped (True) or ``timeout`` seconds pass (False). If a batch failed,
        raise its :class:`dstream.errors.StreamingJobError` (later batches still run)."""
        if timeout is not None and (isinstance(timeout, bool) or timeout < 0):
            raise ValueError(f"timeout {timeout!r} must be a number of seconds >= 0 or None")
        deadline = None if timeout is None else _time.monotonic() + timeout
        with self._state_lock:
            while True:
                if self._error is not None:
                    raise self._error
                if self._state == "stopped":
                    return True
                remaining = None if deadline is None else deadline - _time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._state_lock.wait(remaining)

    def _completed_time(self) -> Time | None:
        """The newest interval live queries read (see JobScheduler.visible)."""
        return None if self._scheduler is None else self._scheduler.visible

    # ---- for tests, benchmarks and the shell ---------------------------------------------------
    def wait_for_batch(self, time: Time | int, timeout_s: float | None = 60.0) -> bool:
        """Block until the batch ending at ``time`` (and all before it) has completed and its
        metadata record is written. False on timeout; raises the HaltedError if the engine
        stopped generating intervals before that batch completed."""
        if self._scheduler is None:
            raise ContextStateError("wait_for_batch() before start(): no batch will run")
        t = time if isinstance(time, Time) else Time(time)
        if self._scheduler.wait_for_batch(t, timeout_s):
            return True
        halted = self._scheduler.halted
        if halted is not None:
            raise halted
        return False
