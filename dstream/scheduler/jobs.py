"""Running output jobs: a pool of ``pipelining_depth`` threads, the ordering gate, retries.

Each job runs in the Spark job group of its interval (so an interval can be observed and
cancelled as a unit). A job that starts while the job before it still runs first *prepares*
(computes its interval's RDD into memory, no side effect), then waits at the ordering gate
until the job before it has *run*, and runs: side effects happen in (interval, output) order
whatever the depth (see :mod:`dstream.scheduler.scheduler`).

A run that fails is run again, after ``output_retry_backoff`` doubled each time, up to
``output_retries`` times, before the job reports its failure: a transient failure (an HDFS
hiccup, a sink timeout, a task's one attempt under ``local[N]``) does not lose the interval.
Outputs are idempotent per interval (``saveAsTextFiles`` and ``save`` commit an interval once),
so a retry never writes twice. Retries happen before the gate opens for the next job, so
they keep the order too.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from dstream.scheduler.events import JobFinished, JobStarted, SchedulerEvent
from dstream.scheduler.failures import describe_failure
from dstream.storage.ownership import FencedError
from dstream.time import Duration, Time

if TYPE_CHECKING:
    from pyspark import SparkContext

    from dstream.clock import Clock
    from dstream.streams.output import Job

__all__ = ["JobRunner", "cancel_running_jobs", "job_description", "job_group"]

log = logging.getLogger(__name__)

JobKey = tuple[Time, int]  # (interval, output index): the order side effects happen in


def job_group(prefix: str, time: Time) -> str:
    """The Spark job group of an interval's output jobs (``JobScheduler._group``): the
    executor monitor and the Spark UI's Streaming tab find an interval's jobs by it."""
    return f"{prefix}-{time.ms}"


def cancel_running_jobs(sc: SparkContext, group: str) -> bool:
    """Cancel ``group``'s running Spark jobs, if it has any (True). An interval waiting at
    the ordering gate or between retries has none, and Spark's ``cancelJobGroup`` warns
    "Failed to cancel job group ... Cannot find active jobs for it" for each such group:
    six warnings at every stop of a program with intervals generated ahead. A job submitted
    after this check is not cancelled, as it would not be by ``cancelJobGroup`` either; the
    runner's own ``cancel()`` keeps the waiting jobs from starting."""
    tracker = sc.statusTracker()
    running = set(tracker.getActiveJobsIds()) & set(tracker.getJobIdsForGroup(group))
    if running:
        sc.cancelJobGroup(group)
    return bool(running)


def job_description(time: Time, output_index: int, label: str) -> str:
    """The Spark job description of an output operation's jobs (shown on Spark's job pages;
    the Streaming tab finds an output operation's jobs by it)."""
    return f"dstream batch {time}, output #{output_index}: {label}"


class JobRunner:
    def __init__(
        self,
        sc: SparkContext,
        clock: Clock,
        *,
        depth: int,
        retries: int,
        backoff: Duration,
        group: Callable[[Time], str],
        post: Callable[[SchedulerEvent], None],
        fence: Callable[[], None] | None = None,
        on_fenced: Callable[[FencedError], None] | None = None,
    ) -> None:
        self._sc = sc
        self._clock = clock
        self._retries = retries
        self._backoff = backoff
        self._group = group
        self._post = post
        # Checks, before each run, that no newer driver owns the checkpoint directory.
        self._fence = fence
        self._on_fenced = on_fenced
        self._pool = ThreadPoolExecutor(depth, thread_name_prefix="dstream-job")
        # The ordering gate: the latest job submitted (the event loop's), the latest that
        # ran (guarded by _cond; job threads wait on it).
        self._last_job: JobKey | None = None
        self._ran: JobKey | None = None
        self._cond = threading.Condition()
        self._cancelled = threading.Event()
        # The fair-scheduler pool each job runs in (None: the default pool).
        self.pool: Callable[[], str | None] = lambda: None

    def submit(self, job: Job) -> None:
        """Run ``job`` after every job submitted before it has run (the event loop calls
        this, in (interval, output) order)."""
        previous, self._last_job = self._last_job, (job.time, job.output_index)
        self._pool.submit(self._run, job, previous)

    def cancel(self) -> None:
        """stop() without grace: jobs waiting at the gate or between retries give up."""
        with self._cond:
            self._cancelled.set()
            self._cond.notify_all()

    @property
    def cancelled(self) -> bool:
        """Whether stop() cancelled the jobs (what fails from then on was cancelled)."""
        return self._cancelled.is_set()

    def shutdown(self, graceful: bool) -> None:
        self._pool.shutdown(wait=True, cancel_futures=not graceful)

    def _run(self, job: Job, previous: JobKey | None) -> None:
        self._post(JobStarted(job.time, job.output_index, self._clock.now().ms))
        error, attempts = None, 0
        self._sc.setJobGroup(
            self._group(job.time),
            job_description(job.time, job.output_index, job.label),
            interruptOnCancel=True,
        )
        try:
            if job.prepare is not None and not self._my_turn(previous):
                # An earlier job still runs: compute ahead meanwhile. (When it is our turn
                # already, running directly saves the extra job.)
                job.prepare()
            self._await_turn(previous)
            self._sc.setLocalProperty("spark.scheduler.pool", self.pool())  # type: ignore[arg-type]
            if job.before is not None:
                job.before()
            attempts = self._run_with_retries(job)
        except BaseException as exc:
            attempts = getattr(exc, "_dstream_attempts", max(attempts, 1))
            error = describe_failure(job.time, job.output_index, job.label, exc)
            if isinstance(exc, FencedError) and self._on_fenced is not None:
                self._on_fenced(exc)
        finally:
            with self._cond:
                # Monotonic: jobs cancelled at the gate by stop() may finish in any order.
                key = (job.time, job.output_index)
                self._ran = key if self._ran is None else max(self._ran, key)
                self._cond.notify_all()
        self._post(JobFinished(job.time, job.output_index, self._clock.now().ms, error, attempts))

    def _run_with_retries(self, job: Job) -> int:
        """Run the job; the number of attempts it took. The last failure is raised with the
        attempt count attached."""
        wait_s = self._backoff.total_seconds()
        for attempt in range(1, self._retries + 2):
            try:
                if self._fence is not None:
                    self._fence()
                job.run()
                return attempt
            except BaseException as exc:
                if attempt > self._retries or self._cancelled.is_set() or _final(exc):
                    exc._dstream_attempts = attempt  # type: ignore[attr-defined]
                    raise
                log.warning(
                    "%s failed at batch %s (attempt %d of %d), running it again in %.3g s: %s: %s",
                    job.label,
                    job.time,
                    attempt,
                    self._retries + 1,
                    wait_s,
                    type(exc).__name__,
                    str(exc).splitlines()[0] if str(exc) else "",
                )
                if self._cancelled.wait(wait_s):
                    exc._dstream_attempts = attempt  # type: ignore[attr-defined]
                    raise
                wait_s *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    def _my_turn(self, previous: JobKey | None) -> bool:
        with self._cond:
            ran = self._ran
        return previous is None or (ran is not None and ran >= previous)

    def _await_turn(self, previous: JobKey | None) -> None:
        """The ordering gate: return once the job before this one has run."""
        with self._cond:
            while not self._my_turn(previous):
                if self._cancelled.is_set():
                    raise RuntimeError("the StreamingContext was stopped before this job ran")
                self._cond.wait()


def _final(exc: BaseException) -> bool:
    """Failures that running again cannot fix: another driver owns the directory, or the
    program is being interrupted."""
    return isinstance(exc, FencedError | KeyboardInterrupt | SystemExit)
