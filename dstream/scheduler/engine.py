"""The running engine of one streaming program, behind the user's StreamingContext.

:class:`dstream.context.StreamingContext` is the PySpark façade: where a program declares its
streams, and what it starts, stops and waits for. Everything it starts is here, in one
object per context:

* the program: the :class:`~dstream.streams.graph.DStreamGraph`, which carries what every
  stream needs (the SparkContext, the clock, the settings, the listener bus, the job group
  and this engine's run-time services, :class:`~dstream.streams.graph.Runtime`);
* start: the checks, the journal and its lease, the executor monitor and Streaming tab, the
  coordinator, the checkpointer, backpressure and the elastic policy, the sources, and the
  scheduler that generates one batch per interval;
* the undo of a start that failed part-way, and the ordered stop;
* what recovery restores into it (:mod:`dstream.scheduler.recovery` sets ``checkpoint_dir``,
  ``journal`` and ``restored_from`` before ``start()``).

Modules given a user's StreamingContext (recovery, replay, the shell) reach its engine with
:func:`engine_of`; streams, sources, Kafka and the receiver reach what they need through
their graph.
"""

from __future__ import annotations

import itertools
import logging
import shutil
import tempfile
import threading
import time as _time
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from dstream import shutdown
from dstream.console import use_default_logging
from dstream.errors import ContextStateError, StreamingJobError
from dstream.functions import check_picklable
from dstream.jvm import live_conf
from dstream.listener import ListenerBus, StreamingListenerStreamingStarted
from dstream.recovery.compatibility import check_program
from dstream.scheduler.checkpointer import Checkpointer
from dstream.scheduler.controllers import start_elastic, start_monitor, start_recovery_episodes
from dstream.scheduler.coordinator import BatchCoordinator
from dstream.scheduler.events import CheckpointFailed, CheckpointWritten
from dstream.scheduler.monitor import (
    ExecutorMonitor,
)
from dstream.scheduler.progress import ProgressTracker
from dstream.scheduler.recovery_episodes import TentativeController
from dstream.scheduler.scheduler import JobScheduler
from dstream.scheduler.webui import attach_web_ui
from dstream.services import Services, UsesServices
from dstream.settings import StreamingSettings
from dstream.storage.filesystem import filesystem_for, join
from dstream.storage.journal import CheckpointDirectoryError, MetadataJournal
from dstream.storage.ownership import claim, owners_on_record
from dstream.streams.copartitioned import SectionMarks
from dstream.streams.graph import DStreamGraph, graph_of
from dstream.streams.state_base import StateStream
from dstream.time import Duration, Time
from dstream.versions import probe_executors

if TYPE_CHECKING:
    from pyspark import SparkContext

    from dstream.clock import Clock
    from dstream.scheduler.webui import StreamingTabFeed
    from dstream.storage.journal import JournalRecord
    from dstream.storage.ownership import Lease

__all__ = ["Engine", "engine_of"]

log = logging.getLogger(__name__)

_ids = itertools.count()


def engine_of(context: object) -> Engine:
    """The engine behind a user's StreamingContext (recovery, replay, the shell)."""
    return cast(Engine, graph_of(context).runtime)


class Engine(UsesServices):
    """One streaming program's engine: its graph, listener bus and everything ``start()``
    starts. ``context`` is the user's StreamingContext (saved by reference with the program,
    returned by ``stream.context()``)."""

    def __init__(
        self,
        context: object,
        sc: SparkContext,
        batch_duration: Duration,
        clock: Clock,
        settings: StreamingSettings,
        checkpoint_dir: str | None,
    ) -> None:
        # dstream's log lines in Spark's console format, at spark.log.level, unless the
        # program configured logging (dstream.console).
        use_default_logging(live_conf(sc).get("spark.log.level"))
        self.batch_duration = batch_duration
        self.id = next(_ids)
        # Made once, handed down to the graph, the scheduler and the recovery episodes.
        self.services = Services(
            sc, clock, settings, ListenerBus(), f"dstream-{sc.applicationId}-{self.id}"
        )
        self.graph = DStreamGraph(
            batch_duration, context=context, services=self.services, runtime=self
        )
        self.state = "initialized"
        self._state_lock = threading.Condition()
        self._error: StreamingJobError | None = None
        self.checkpoint_dir = checkpoint_dir
        # Set by recovery before start(): the journal getOrCreate() read and its newest record.
        self.journal: MetadataJournal | None = None
        self.restored_from: JournalRecord | None = None
        self.scheduler: JobScheduler | None = None
        self.monitor: ExecutorMonitor | None = None
        self.web_ui: StreamingTabFeed | None = None  # the Spark UI's Streaming tab, metrics
        self.checkpointer: Checkpointer | None = None
        self.tentative: TentativeController | None = None
        self.coordinator: BatchCoordinator | None = None
        # This driver's lease on the checkpoint directory (see dstream.storage.ownership).
        self.lease: Lease | None = None
        self._temp_storage: str | None = None
        self._section_marks: SectionMarks | None = None
        self.progress = ProgressTracker(self)
        self.bus.add(self.progress)

    # ---- what the streams ask of the running engine (dstream.streams.graph.Runtime) ---------
    def check_can_add(self, what: str) -> None:
        if self.state != "initialized":
            raise ContextStateError(
                f"cannot add {what}() to a StreamingContext that is {self.state}; declare "
                "every stream and output operation before ssc.start()"
            )

    @property
    def marks(self) -> SectionMarks:
        """Cached one-mark-per-partition RDDs for sectioned unions of keyed state."""
        if self._section_marks is None:
            self._section_marks = SectionMarks(self.sc)
        return self._section_marks

    def completed_time(self) -> Time | None:
        """The newest interval live queries read (see JobScheduler.visible)."""
        return None if self.scheduler is None else self.scheduler.visible

    # ---- before start ------------------------------------------------------------------------
    def use_checkpoint_dir(self, directory: str) -> None:
        """Bind this program to ``directory``, creating it (and its parents) if missing."""
        try:
            filesystem_for(directory, self.sc).mkdirs(directory)
        except OSError as exc:
            raise CheckpointDirectoryError(
                f"checkpoint directory {directory} cannot be created: {exc}; choose a "
                "directory this program's user can write"
            ) from exc
        self.checkpoint_dir = directory

    # ---- start -------------------------------------------------------------------------------
    def start(self, on_active: Callable[[], None]) -> None:
        """Check the program and start generating one batch per interval; ``on_active`` runs
        once the engine is active (under the state lock, so a concurrent stop sees it)."""
        with self._state_lock:
            if self.state == "active":
                raise ContextStateError(
                    "start() was called on a StreamingContext that is already running; "
                    "call start() once"
                )
            if self.state in ("stopping", "stopped"):
                raise ContextStateError(
                    "start() was called on a stopped StreamingContext; it cannot be restarted — "
                    "create a new StreamingContext and define the streams again"
                )
            graph = self.graph
            graph.validate()
            # Which recovery modes and features combine: the one table, over the program.
            check_program(
                [s for s in graph.streams if isinstance(s, StateStream)],
                pipelining_depth=self.settings.pipelining_depth,
            )
            # A misspelt spark.streaming.stopGracefullyOnShutdown fails here, not at exit.
            shutdown.graceful_on_shutdown(
                live_conf(self.sc).get(shutdown.STOP_GRACEFULLY_ON_SHUTDOWN)
            )
            check_picklable(graph.user_functions())
            probe_executors(self.sc)  # executors elsewhere run the driver's dstream
            self._check_max_history()
            if any(s.needs_storage for s in graph.streams):
                root = self._storage_root()
                for stream in graph.streams:
                    stream.prepare_storage(root)
            now = self.clock.now()
            if self.restored_from is not None:
                zero, first = resume_time(self.restored_from)
            else:
                first = now.floor(self.batch_duration) + self.batch_duration
                zero = first - self.batch_duration
            try:
                self._start_parts(now, zero, first)
            except BaseException:
                self._undo_start()
                raise
            self.state = "active"
            on_active()

    def _start_parts(self, now: Time, zero: Time, first: Time) -> None:
        """start()'s work once the program is checked: the journal and its lease, the
        executor monitor and Streaming tab, the coordinator, checkpointer, listener bus,
        sources and scheduler, which generates ``first`` and every interval after it."""
        graph = self.graph
        graph.start(zero)
        journal = self._open_journal() if self.checkpoint_dir is not None else None
        if journal is not None:
            self._give_rdds_the_checkpoint_dir()
        self.lease = None if journal is None else claim(journal.fs, journal.directory)
        if journal is not None and self.restored_from is None and journal.holds_records():
            self._set_aside_old_program(journal)
        self.monitor = start_monitor(self)
        self.web_ui = attach_web_ui(self, self.monitor)
        self.coordinator = BatchCoordinator(graph, journal, self.lease, self.monitor)
        scheduler = JobScheduler(
            graph,
            self.services,
            on_error=self._report_error,
            hooks=self.coordinator,
            failed_before=failed_before(self.restored_from),
            lease=self.lease,
        )
        if any(s.is_state for s in graph.streams):
            self.checkpointer = Checkpointer(
                self.sc,
                self.job_group_prefix,
                lambda stream, time, s: scheduler.post(CheckpointWritten(stream, time, s)),
                lambda stream, time, e, n: scheduler.post(CheckpointFailed(stream, time, e, n)),
                retries=self.settings.checkpoint_retries,
            )
            self.checkpointer.start()
        start_elastic(self)
        self.tentative = start_recovery_episodes(self, scheduler)
        self.bus.start()
        self.bus.post("onStreamingStarted", StreamingListenerStreamingStarted(now.ms))
        for source in graph.inputs:
            source.start()
        if self.restored_from is None:
            self.coordinator.program_started()
        self.scheduler = scheduler
        scheduler.start(first)

    def _undo_start(self) -> None:
        """A start() that failed part-way (a receiver's port taken, a lease refused...) stops
        what it had started (threads, sources, the Streaming tab) and leaves the context
        stopped: the error is the user's to fix, in a new StreamingContext."""
        parts: list[tuple[str, Callable[[], object]]] = []
        if self.scheduler is not None:
            scheduler = self.scheduler
            parts.append(("scheduler", lambda: scheduler.stop(graceful=False)))
        if self.checkpointer is not None:
            checkpointer = self.checkpointer
            parts.append(("checkpointer", lambda: checkpointer.stop(graceful=False)))
        parts += [(f"input {s.id}", s.stop) for s in self.graph.inputs]
        if self.monitor is not None:
            parts.append(("executor monitor", self.monitor.stop))
        lease, coordinator = self.lease, self.coordinator
        fresh = self.restored_from is None
        if lease is not None and fresh and (coordinator is None or not coordinator.records_written):
            parts.append(("lease of a program never recorded", lease.release))
        parts.append(("listener bus", self.bus.stop))
        if self.web_ui is not None:
            parts.append(("Streaming tab", self.web_ui.stop))
        for what, stop in parts:
            try:
                stop()
            except Exception:
                log.debug("stopping the %s after a failed start()", what, exc_info=True)
        self._remove_temp_storage()
        self.state = "stopped"

    def _give_rdds_the_checkpoint_dir(self) -> None:
        """As Spark's ``checkpoint()``: RDDs the program checkpoints itself (``rdd.checkpoint()``
        in ``foreachRDD`` or ``transform``) are written under the checkpoint directory, in
        ``rdd-checkpoints/`` — unless the SparkContext has a checkpoint directory already
        (the program's own choice, or another running context's), which is kept."""
        assert self.checkpoint_dir is not None
        if self.sc.getCheckpointDir() is None:
            self.sc.setCheckpointDir(join(self.checkpoint_dir, "rdd-checkpoints"))

    def _check_max_history(self) -> None:
        limit = self.settings.max_history
        if limit is None:
            return
        for stream in self.graph.streams:
            needed = stream.history_needed()
            if needed is not None and limit <= needed[0]:
                raise ValueError(
                    f"settings.max_history {limit} must be longer than the {needed[1]} "
                    f"{needed[0]} of {stream.label}: the input since its last checkpoint, or "
                    "its window, must still be there to be recomputed; raise max_history or "
                    "shorten that interval"
                )

    def _open_journal(self) -> MetadataJournal:
        """The journal of this program's checkpoint directory: the one getOrCreate() read,
        or a new one, which must not hold another program's records."""
        assert self.checkpoint_dir is not None
        journal = self.journal
        if journal is None:
            fs = filesystem_for(self.checkpoint_dir, self.sc)
            journal = MetadataJournal(fs, self.checkpoint_dir)
            journal.check_directory(create=True)
            if self.settings.existing_checkpoint == "refuse" and journal.holds_records():
                raise CheckpointDirectoryError(
                    f"checkpoint directory {self.checkpoint_dir} already holds the metadata "
                    "of a streaming program, and StreamingSettings(existing_checkpoint="
                    "'refuse') keeps a new program from replacing it; resume it with "
                    f"StreamingContext.getOrCreate({self.checkpoint_dir!r}, setup), or "
                    "choose a new directory"
                )
        journal.delete_stale_temporaries()
        self.journal = journal
        return journal

    def _set_aside_old_program(self, journal: MetadataJournal) -> None:
        """A program that did not come from getOrCreate() starts in a directory holding
        another program's metadata: a new program, as pyspark.streaming starts one. This
        driver's epoch is taken first, so a driver of the old program that still runs stops
        at its next write (FencedError); then the old program's files are moved aside,
        never mixed with the new one's, and never deleted."""
        assert self.lease is not None
        older = owners_on_record(journal.fs, journal.directory)[1:2]
        where = journal.set_aside(f"before-epoch-{self.lease.epoch:012d}")
        log.warning(
            "checkpoint directory %s held another streaming program's metadata%s: this "
            "StreamingContext was not made by StreamingContext.getOrCreate(), so a new program "
            "starts, as in pyspark.streaming; the old program's files are now in %s. To resume "
            "a program, create it with StreamingContext.getOrCreate(%r, setup); to refuse "
            "instead, StreamingSettings(existing_checkpoint='refuse')",
            journal.directory,
            f" (its last driver: {older[0]})" if older else "",
            where,
            journal.directory,
        )

    def _storage_root(self) -> str:
        """Where streams keep their own files: the checkpoint directory, or, when none is set
        and every executor shares this machine's file system (local masters), a temporary
        directory removed at stop()."""
        if self.checkpoint_dir is not None:
            return self.checkpoint_dir
        master = self.sc.master or ""
        if not master.startswith("local"):
            raise ValueError(
                f"track() keeps state snapshots that every executor reads, and master {master!r} "
                "runs executors on other machines; call ssc.checkpoint(directory) with a "
                "directory they all reach before start()"
            )
        if self._temp_storage is None:
            self._temp_storage = tempfile.mkdtemp(prefix="dstream-state-")
        return self._temp_storage

    def _remove_temp_storage(self) -> None:
        if self._temp_storage is not None:
            shutil.rmtree(self._temp_storage, ignore_errors=True)
            self._temp_storage = None

    def _report_error(self, error: StreamingJobError) -> None:
        with self._state_lock:
            self._error = error
            self._state_lock.notify_all()

    # ---- stop and wait -----------------------------------------------------------------------
    def stop(self, stop_spark_context: bool, graceful: bool) -> None:
        """The ordered stop (see StreamingContext.stop): scheduler, checkpointer, sources,
        monitor, listener bus, Streaming tab; then the SparkContext, or what the program
        cached in it. A call made while another is stopping waits for it to finish."""
        with self._state_lock:
            was = self.state
            if was == "stopping":
                self._state_lock.wait_for(lambda: self.state == "stopped")
                return
            self.state = "stopping" if was == "active" else "stopped"
        if was == "active":
            assert self.scheduler is not None
            self.scheduler.stop(graceful=graceful, leave_deferred=self._restart_reads())
            if self.tentative is not None:
                self.tentative.stop()
            if self.checkpointer is not None:
                self.checkpointer.stop(graceful=graceful)
            for source in self.graph.inputs:
                source.stop()
            if self.monitor is not None:
                self.monitor.stop()
            self.bus.stop()
            if self.web_ui is not None:
                self.web_ui.stop()
        self._remove_temp_storage()
        if stop_spark_context and was != "stopped":
            self.sc.stop()
        elif was == "active":
            self.graph.release()
            if self._section_marks is not None:
                self._section_marks.release()
        with self._state_lock:
            self.state = "stopped"  # awaitTermination returns once everything has stopped
            self._state_lock.notify_all()

    def _restart_reads(self) -> str | None:
        """Where a driver restarted from this program's checkpoint finds the input of the
        intervals not generated yet (so a graceful stop can leave them), or None when it
        would not (no checkpoint directory of the user's, or a source that cannot read a
        past interval again: those intervals are run before the stop)."""
        if self.checkpoint_dir is None:
            return None
        if not all(source.durable for source in self.graph.inputs):
            return None
        return (
            "their input is still at its sources, and a driver restarted from "
            f"{self.checkpoint_dir} (StreamingContext.getOrCreate) runs them"
        )

    def await_termination(self, timeout: float | None) -> bool:
        """Wait until stopped (True) or ``timeout`` seconds pass (False); raise the error of
        a failed batch."""
        deadline = None if timeout is None else _time.monotonic() + timeout
        with self._state_lock:
            while True:
                if self._error is not None:
                    raise self._error
                if self.state == "stopped":
                    return True
                remaining = None if deadline is None else deadline - _time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._state_lock.wait(remaining)

    def wait_for_batch(self, time: Time, timeout_s: float | None) -> bool:
        """See StreamingContext.wait_for_batch."""
        if self.scheduler is None:
            raise ContextStateError("wait_for_batch() before start(): no batch will run")
        if self.scheduler.wait_for_batch(time, timeout_s):
            return True
        halted = self.scheduler.halted
        if halted is not None:
            raise halted
        return False

    def monitor_or_raise(self) -> ExecutorMonitor:
        if self.monitor is None:
            raise ContextStateError(
                "the executor monitor runs once the context is started with the JVM shim "
                "built (`make shim`)"
            )
        return self.monitor


def failed_before(record: JournalRecord | None) -> tuple[Time, ...]:
    """The intervals a restored program's journal recorded as failed (kept on record, and
    reported once at restart)."""
    if record is None or not record.failed_ms:
        return ()
    log.warning(
        "%d intervals failed before the restart and were not run again "
        "(on_failed_interval='continue'): %s",
        len(record.failed_ms),
        ", ".join(str(Time(ms)) for ms in record.failed_ms[-10:]),
    )
    return tuple(Time(ms) for ms in record.failed_ms)


def resume_time(record: JournalRecord) -> tuple[Time, Time]:
    """(zero time, first interval to run) of a restored program."""
    batch = Duration(record.batch_ms)
    zero = Time(record.zero_ms)
    done = record.completed_ms
    first = (Time(done) if done is not None else zero) + batch
    return zero, first
