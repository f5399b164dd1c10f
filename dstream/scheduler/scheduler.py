"""The job scheduler: one event loop that turns timer ticks into Spark jobs.

::

    timer thread ──GenerateJobs(t)──▶ ┌──────────────┐ ──submit──▶ job threads (≤ depth,
    job threads ──JobStarted/Finished─▶│  event loop  │            dstream.scheduler.jobs)
    checkpointer ─CheckpointWritten───▶│              │
                 ─CheckpointFailed────▶│              │
    stop()     ──Shutdown────────────▶ └──────────────┘
                                         │ listeners (own thread), errors, clear_metadata,
                                         │ the coordinator's hooks (metadata journal)

Only the event loop changes batch state. Job generation for interval t runs on the event
loop: it builds RDDs (lazily, on the driver) and hands each output's job to the job pool; the
pool's size is the pipelining depth — how many output jobs, of one interval or of several,
may run at once.

Timestep pipelining (depth > 1, paper Sec. 4.2): a job that starts while the job before it
still runs first *prepares* — computes its interval's RDD into memory, which has no side
effect — so the tasks of interval t+1 fill the cores interval t leaves idle. It then waits at
the ordering gate until the job before it has *run* (its side effect: foreachRDD, pprint, a
save), and runs. Side effects therefore happen in exactly the order depth 1 gives them —
interval by interval, outputs in the order they were registered — and batches complete in
interval order; the depth changes when work is computed, never the order of what it does. A
state stream's interval t+1 needs only its parents' RDDs of t; Spark's DAG scheduler shares
the stages the two jobs have in common, so t+1 waits for exactly those and no more::

    depth 1:  [t: compute+run ][t+1: compute+run ]
    depth 2:  [t: compute  ][run t]
                 [t+1: compute   ]…gate…[run t+1]

Backlog: at most ``max_backlog`` intervals are generated and not complete; an interval that
comes due beyond that waits (in order) and is generated as earlier ones complete — after an
outage, missed intervals are caught up that way instead of all at once, so lineage and
memory do not grow with the length of the outage. Each batch reports the backlog.

A failed interval (its output still failed after the job runner's retries) is never counted
as completed: with ``on_failed_interval="continue"`` later intervals run, the error is raised
from ``awaitTermination`` and the interval is recorded as failed in the metadata journal; with
``"halt"`` nothing after it is generated or completed, so the journal still has it pending
and a restarted driver runs it again before going on.
"""

from __future__ import annotations

import logging
import queue
import threading
import time as _time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dstream.errors import HaltedError
from dstream.listener import (
    StreamingListenerBatchCompleted,
    StreamingListenerBatchStarted,
    StreamingListenerBatchSubmitted,
    StreamingListenerOutputOperationCompleted,
    StreamingListenerOutputOperationStarted,
)
from dstream.scheduler.batches import Batch
from dstream.scheduler.checkpoint_reports import CheckpointReports
from dstream.scheduler.coordinator import Position
from dstream.scheduler.events import (
    CheckpointFailed,
    CheckpointWritten,
    ExecutorLost,
    GenerateJobs,
    JobFinished,
    JobStarted,
    LossRecheck,
    SchedulerEvent,
    Shutdown,
)
from dstream.scheduler.jobs import JobRunner, cancel_running_jobs
from dstream.scheduler.timer import RecurringTimer
from dstream.time import Time

if TYPE_CHECKING:
    from dstream.errors import StreamingJobError
    from dstream.scheduler.coordinator import BatchCoordinator
    from dstream.scheduler.recovery_episodes import TentativeController
    from dstream.services import Services
    from dstream.storage.ownership import Lease
    from dstream.streams.graph import DStreamGraph

__all__ = ["JobScheduler", "OverheadStats"]

log = logging.getLogger(__name__)


@dataclass
class OverheadStats:
    """Driver-side seconds spent per interval (perf_counter), for the overhead benchmark."""

    generate_s: deque[float] = field(default_factory=lambda: deque(maxlen=100_000))
    complete_s: deque[float] = field(default_factory=lambda: deque(maxlen=100_000))


class JobScheduler:
    def __init__(
        self,
        graph: DStreamGraph,
        services: Services,
        *,
        on_error: Callable[[StreamingJobError], None],
        hooks: BatchCoordinator,
        failed_before: tuple[Time, ...] = (),
        lease: Lease | None = None,
    ) -> None:
        self._graph = graph
        sc, clock, settings = services.sc, services.clock, services.settings
        self._sc, self._clock, self._settings = sc, clock, settings
        self._bus = services.bus
        self._on_error = on_error
        self._group_prefix = services.job_group_prefix
        self._hooks = hooks
        self._events: queue.Queue[SchedulerEvent] = queue.Queue()
        self._timer = RecurringTimer(
            clock, graph.batch_duration, lambda t: self.post(GenerateJobs(t)), "dstream-timer"
        )
        self._jobs = JobRunner(
            sc,
            clock,
            depth=settings.pipelining_depth,
            retries=settings.output_retries,
            backoff=settings.output_retry_backoff,
            group=self._group,
            post=self.post,
            fence=None if lease is None else lambda: lease.check("running an output job"),
            on_fenced=lambda exc: self.halt("running an output job", exc),
        )
        self._loop_thread: threading.Thread | None = None
        # State below is owned by the event loop; _done guards what waiters read.
        self._batches: dict[Time, Batch] = {}
        self._done = threading.Condition()
        self._completed: deque[Time] = deque(maxlen=1000)
        # Intervals due but not generated yet (the backlog bound), in order.
        self._deferred: deque[Time] = deque()
        # A graceful stop that leaves the deferred intervals to a restarted driver.
        self._draining = False
        # Intervals whose output failed after its retries (kept in the journal), newest last.
        self._failed: deque[Time] = deque(failed_before, maxlen=1000)
        self._last_generated: Time | None = None
        # The latest batch whose completion hook (the metadata record) has run: waiters
        # see a batch as complete only from then on.
        self._settled: Time | None = None
        self._visible: Time | None = None
        self._halted: HaltedError | None = None
        self._checkpoints = CheckpointReports(
            graph, services, hooks=hooks, position=self._position, halt=self.halt
        )
        # Set by stop() before the job pool shuts down; an interval the timer posted just
        # before the stop is then not generated (instead of failing to submit its jobs).
        self._stopping = False
        self._generating = threading.Lock()
        self.stats = OverheadStats()
        # Tentative results while a loss is recovered (dstream.scheduler.recovery_episodes).
        self._tentative: TentativeController | None = None
        self._recent_work: deque[int] = deque(maxlen=20)

    def attach_tentative(self, controller: TentativeController) -> None:
        """Tell ``controller`` of every interval generated and completed; its pool (the
        exact recomputation's, during a recovery) is the one output jobs run in."""
        self._tentative = controller
        self._jobs.pool = controller.exact_pool

    def recent_work_ms(self) -> list[int]:
        """The work time (wall ms) of the last 20 completed intervals."""
        with self._done:
            return list(self._recent_work)

    # ---- control (any thread) -------------------------------------------------------------
    def post(self, event: SchedulerEvent) -> None:
        self._events.put(event)

    def start(self, first_batch: Time) -> None:
        self._loop_thread = threading.Thread(
            target=self._run, name="dstream-scheduler", daemon=True
        )
        self._loop_thread.start()
        self._timer.start(first_batch)

    def stop(self, graceful: bool, leave_deferred: str | None = None) -> None:
        """Stop generating; gracefully: let the generated intervals finish (and, unless
        ``leave_deferred`` says where a restart finds their input, the due intervals the
        backlog bound kept back), then say what was done."""
        self._timer.stop()
        if graceful:
            began = _time.monotonic()
            if leave_deferred is not None:
                with self._generating:
                    self._draining = True  # what is not generated yet stays so
            with self._done:
                since = self._settled  # the newest interval completed before the stop
            finished = self._wait_for_generated(
                self._settings.graceful_stop_timeout.total_seconds()
            )
            with self._done:
                done = sum(1 for t in self._completed if since is None or t > since)
                in_flight, left = len(self._batches), len(self._deferred)
            took = _time.monotonic() - began
            if not finished:
                log.warning(
                    "graceful stop gave up after %.0f s (StreamingSettings."
                    "graceful_stop_timeout): %d intervals finished, %d still running are "
                    "cancelled, %d due were not generated",
                    took, done, in_flight, left,
                )  # fmt: skip
            elif left:
                log.warning(
                    "graceful stop: %d generated intervals finished in %.1f s; %d due "
                    "intervals were not generated: %s",
                    done, took, left, leave_deferred,
                )  # fmt: skip
            else:
                log.info("graceful stop: %d intervals finished in %.1f s", done, took)
            if not finished:
                self._jobs.cancel()
                for t in list(self._batches):
                    cancel_running_jobs(self._sc, self._group(t))
        else:
            with self._done:
                running = list(self._batches)
            self._jobs.cancel()  # jobs waiting at the gate or to retry give up
            for t in running:
                cancel_running_jobs(self._sc, self._group(t))
        with self._generating:
            self._stopping = True
        self._jobs.shutdown(graceful)
        self.post(Shutdown())
        if self._loop_thread is not None:
            self._loop_thread.join()

    def wait_for_batch(self, time: Time, timeout_s: float | None = None) -> bool:
        """Block until the batch of ``time`` and every batch before it have completed, their
        completion hooks (the metadata journal's records) included. False on timeout or
        when the engine halted first."""
        deadline = None if timeout_s is None else _time.monotonic() + timeout_s
        with self._done:
            while self._settled is None or self._settled < time:
                if self._halted is not None:
                    return False
                remaining = None if deadline is None else deadline - _time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._done.wait(remaining)
            return True

    @property
    def visible(self) -> Time | None:
        """The newest interval live queries read: every job of it and of every interval
        before it is done (read under the graph's lock, with what it pins)."""
        return self._visible

    @property
    def last_generated(self) -> Time | None:
        with self._done:
            return self._last_generated

    @property
    def completed_upto(self) -> Time | None:
        """The latest time up to which every generated interval has completed."""
        with self._done:
            if self._batches:
                earliest = min(self._batches)
                return earliest - self._graph.batch_duration
            return self._last_generated

    def pending(self) -> list[Time]:
        with self._done:
            return sorted(self._batches)

    def _position(self) -> Position:
        return Position(
            self.last_generated, self.completed_upto, tuple(self.pending()), tuple(self._failed)
        )

    @property
    def completed_batches(self) -> list[Time]:
        with self._done:
            return list(self._completed)

    @property
    def failed_batches(self) -> list[Time]:
        """Intervals whose output failed after its retries (the newest 1000)."""
        with self._done:
            return list(self._failed)

    def _wait_for_generated(self, timeout_s: float) -> bool:
        """Wait until no interval is running or due (draining: running); False when
        ``timeout_s`` passed first."""
        # Everything the timer posted is in the queue before this marker-free check.
        deadline = _time.monotonic() + timeout_s
        with self._done:
            while True:
                if self._halted is not None:
                    return True  # nothing more will be generated or completed normally
                pending_events = not self._events.empty()
                deferred = self._deferred and not self._draining
                if not self._batches and not deferred and not pending_events:
                    return True
                remaining = deadline - _time.monotonic()
                if remaining <= 0:
                    return False
                self._done.wait(min(remaining, 0.1))

    def _group(self, time: Time) -> str:
        return f"{self._group_prefix}-{time.ms}"

    # ---- the event loop ---------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            event = self._events.get()
            try:
                match event:
                    case GenerateJobs(time):
                        if self._halted is None:
                            self._generate(time)
                    case JobStarted(time, index, at_ms):
                        self._job_started(time, index, at_ms)
                    case JobFinished(time, index, at_ms, error, attempts):
                        self._job_finished(time, index, at_ms, error, attempts)
                    case CheckpointWritten(stream, time, seconds):
                        self._checkpoints.written(stream, time, seconds)
                    case CheckpointFailed(stream, time, error, attempts):
                        self._checkpoints.failed(stream, time, error, attempts)
                    case ExecutorLost(executor, look):
                        if self._tentative is not None:
                            self._tentative.on_lost(executor, look)
                    case LossRecheck(executor, found, completed_upto):
                        if self._tentative is not None:
                            self._tentative.on_recheck(executor, found, completed_upto)
                    case Shutdown():
                        return
            except Exception as exc:
                self.halt(f"handling {event!r}", exc, getattr(event, "time", None))

    def halt(self, what: str, exc: BaseException, time: Time | None = None) -> None:
        """The engine failed, or an interval failed under ``on_failed_interval="halt"``: stop
        generating intervals and raise the failure from awaitTermination. Any thread."""
        with self._done:
            if self._halted is not None:
                log.error("dstream: also failed %s: %s", what, exc)
                return
            at = time if time is not None else (self._last_generated or Time(0))
            self._halted = HaltedError(
                f"dstream stopped generating intervals at batch {at}: {what} failed: "
                f"{type(exc).__name__}: {exc}. Call stop(), fix the cause, then restart with "
                "StreamingContext.getOrCreate(checkpointPath, setup): it resumes from the last "
                "metadata record that was written",
                batch_time=at,
                operation=what,
                traceback_text="".join(traceback.format_exception(exc)),
            )
            self._done.notify_all()
        log.error("%s", self._halted)
        self._on_error(self._halted)

    @property
    def halted(self) -> HaltedError | None:
        return self._halted

    # ---- generating intervals -----------------------------------------------------------------
    def _generate(self, time: Time) -> None:
        """Generate ``time`` now, or defer it behind the backlog bound (in order)."""
        if self._deferred or len(self._batches) >= self._settings.max_backlog or self._draining:
            self._deferred.append(time)
            return
        with self._generating:
            if not self._stopping:
                self._generate_now(time)

    def _generate_deferred(self) -> None:
        while (
            self._deferred
            and self._halted is None
            and not self._draining
            and len(self._batches) < self._settings.max_backlog
        ):
            time = self._deferred.popleft()
            with self._generating:
                if self._stopping:
                    return
                self._generate_now(time)

    def _generate_now(self, time: Time) -> None:
        began = _time.perf_counter()
        jobs = self._graph.generate_jobs(time)
        batch = Batch.submitted(time, jobs, self._clock.now().ms, len(self._deferred))
        with self._done:
            self._batches[time] = batch
            self._last_generated = time
        # Before any job runs: the metadata journal records which input this interval reads
        # before any of its output can happen.
        self._hooks.batch_generated(time, self._position())
        self._bus.post("onBatchSubmitted", StreamingListenerBatchSubmitted(batch.info))
        for job in jobs:
            self._jobs.submit(job)
        self.stats.generate_s.append(_time.perf_counter() - began)
        if self._tentative is not None:
            self._tentative.on_generated(time)
        if not jobs:
            self._complete_in_order()

    # ---- jobs and batches -----------------------------------------------------------------
    def _job_started(self, time: Time, index: int, at_ms: int) -> None:
        batch = self._batches[time]
        op, first = batch.output_started(index, at_ms)
        if first:
            self._bus.post("onBatchStarted", StreamingListenerBatchStarted(batch.info))
        self._bus.post("onOutputOperationStarted", StreamingListenerOutputOperationStarted(op))

    def _job_finished(
        self, time: Time, index: int, at_ms: int, error: StreamingJobError | None, attempts: int
    ) -> None:
        batch = self._batches[time]
        if error is not None and self._jobs.cancelled:
            # Cancelled by stop(), not failed: the interval is left pending, so the journal
            # never records it (as completed or as failed) and a program restarted from its
            # checkpoint runs it again, as after a crash.
            log.info(
                "dstream: %s at batch %s cancelled by stop()", batch.outputs[index].label, time
            )
            return
        op = batch.output_finished(index, at_ms, error, attempts)
        self._bus.post("onOutputOperationCompleted", StreamingListenerOutputOperationCompleted(op))
        if error is not None:
            if self._halted is not None:
                pass  # fenced, or halted meanwhile: that error is the one reported
            elif self._settings.on_failed_interval == "halt":
                # The interval stays pending: the journal never records it as completed, and
                # a restarted driver runs it again before going on.
                self.halt(f"{op.label} at batch {time} (after {attempts} attempts)", error, time)
            else:
                # The headline only: awaitTermination raises the error with its traceback,
                # which logged here as well was printed twice (79 lines for one failure).
                log.error(
                    "%s (awaitTermination raises it with its traceback)",
                    str(error).splitlines()[0],
                )
                log.debug("%s", error)
                self._on_error(error)
        if batch.pending == 0:
            self._complete_in_order()

    def _complete_in_order(self) -> None:
        """Complete finished batches, earliest first, stopping at one still running (with
        pipelining a later interval's jobs may all be done before an earlier one's). Under
        ``on_failed_interval="halt"`` nothing completes once the engine halted."""
        for time in sorted(self._batches):
            batch = self._batches[time]
            if batch.pending > 0 or self._halted is not None:
                return
            self._complete(batch, batch.finished_at_ms)
        self._generate_deferred()

    def _complete(self, batch: Batch, at_ms: int | None = None) -> None:
        began = _time.perf_counter()
        batch.complete_info(self._graph, self._clock.now().ms if at_ms is None else at_ms)
        for job in batch.jobs:
            if job.release is not None:
                job.release()
        with self._graph.lock:
            # Live queries see this interval as the newest from now on, in the same step in
            # which older ones are forgotten: a query pins what it reads under this lock.
            self._visible = batch.time
            self._graph.batch_completed(batch.time)
        self._bus.post("onBatchCompleted", StreamingListenerBatchCompleted(batch.info))
        with self._done:
            del self._batches[batch.time]
            self._completed.append(batch.time)
            if batch.failed:
                self._failed.append(batch.time)
        self._hooks.batch_completed(batch.time, self._position())
        with self._done:
            self._settled = batch.time
            if batch.info.work_ms:
                self._recent_work.append(batch.info.work_ms)
            self._done.notify_all()
        if self._tentative is not None:
            self._tentative.on_completed(batch.time)
        self.stats.complete_s.append(_time.perf_counter() - began)

    def active(self) -> tuple[list[dict[str, Any]], int]:
        """The generated intervals not completed yet, oldest first, as the Streaming tab's
        "Active Batches" shows them, and how many due intervals are not generated yet (held
        back by ``max_backlog``)."""
        with self._done:
            batches = [self._batches[t] for t in sorted(self._batches)]
            deferred = len(self._deferred)
        return [b.active_row() for b in batches], deferred

    # for tests and the shell
    def running_batches(self) -> list[Any]:
        with self._done:
            return sorted(self._batches)
