"""The executor monitor: what the tasks of each interval did, which executors straggle, and —
if asked — stop giving work to an executor that keeps straggling.

One thread drains the JVM shim's event buffer (:class:`~dstream.scheduler.shim.TaskEventFeed`,
one Py4J call per poll) and:

- counts, per interval (its Spark job group), the tasks, speculative copies and failures, and
  which executors ran them (:meth:`ExecutorMonitor.tasks_of`);
- judges slow tasks with the paper's rule (:class:`~dstream.scheduler.stragglers.
  StragglerDetector`: longer than 1.4 x the median of the stage's finished tasks);
- when an interval has completed, tells :class:`~dstream.scheduler.stragglers.ExecutorHealth`
  which executors straggled in it (not for ``window`` intervals after executors joined or
  left: slowness is expected then and says nothing about a node); with an
  :class:`~dstream.settings.AvoidancePolicy`, an executor that straggled in ``strikes`` of its
  last ``window`` intervals is *avoided*, and after a cooldown the cluster is asked for it
  back;
- hands every event to subscribers (:meth:`subscribe`), so tools see the same stream.

Avoiding an executor uses the two calls Spark offers a driver for this (both public
``@DeveloperApi`` on ``SparkContext``)::

    killExecutor(id)              the executor and its cached blocks go; tasks move elsewhere
    requestTotalExecutors(N - 1)  ... and the cluster manager does not replace it
    ... cooldown ...
    requestTotalExecutors(N)      a fresh executor joins (on whichever worker has room)

``killExecutor`` alone is not enough under static allocation: it lowers the application's
executor target from its initial 0 ("not managed") to 0, and a standalone Master then never
replaces *any* executor, even one that crashes later. What the avoided executor held is
recomputed from lineage, like a failure, which is why avoidance needs repeated strikes.
Spark's own exclusion (``spark.excludeOnFailure``) reacts to failed tasks, not slow ones, and
graceful decommissioning (which would migrate the blocks first) is not public API.
"""

from __future__ import annotations

import logging
import statistics
import threading
import time as _time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dstream.jvm import live_conf
from dstream.scheduler.shim import (
    ExecutorAdded,
    ExecutorRemoved,
    ListenerEvent,
    StageCompleted,
    StageSubmitted,
    TaskEnd,
    TaskStart,
)
from dstream.scheduler.stragglers import ExecutorHealth, StragglerDetector, TaskTiming
from dstream.time import Time

if TYPE_CHECKING:
    from pyspark import SparkContext

    from dstream.scheduler.shim import TaskEventFeed
    from dstream.settings import AvoidancePolicy

__all__ = [
    "ExecutorAction",
    "ExecutorMonitor",
    "IntervalTasks",
    "SparkExecutorControl",
    "Subscription",
]

log = logging.getLogger(__name__)


@dataclass
class IntervalTasks:
    """What the tasks of one interval did (its output jobs; checkpoint jobs not included)."""

    tasks: int = 0
    speculative: int = 0
    failed: int = 0
    executors: set[str] = field(default_factory=set)
    stragglers: set[str] = field(default_factory=set)  # executors with a slow task (1.4x)
    # Per executor, each finished task's time / its stage's median (inf: outrun by a copy).
    slowdowns: dict[str, list[float]] = field(default_factory=dict)

    def slowed(self, factor: float) -> set[str]:
        """Executors most of whose judged tasks took more than ``factor`` x the median."""
        return {
            ex
            for ex, ratios in self.slowdowns.items()
            if 2 * sum(r > factor for r in ratios) > len(ratios)
        }


@dataclass(frozen=True)
class ExecutorAction:
    kind: str  # "avoid", "restore", "scale up" or "scale down"
    executor: str  # the avoided executor (for "restore": the one it replaces; scaling: ids)
    host: str | None
    at_ms: int  # epoch ms
    target: int  # executors asked of the cluster manager afterwards
    reason: str = ""  # why an elastic step was taken


class Subscription:
    """Every event the monitor drains from now on, in order (until :meth:`close`)."""

    def __init__(self, monitor: ExecutorMonitor) -> None:
        self._monitor = monitor
        self._events: deque[ListenerEvent] = deque()
        self._lock = threading.Lock()

    def _extend(self, events: list[ListenerEvent]) -> None:
        with self._lock:
            self._events.extend(events)

    def poll(self) -> list[ListenerEvent]:
        """Drains the monitor's feed first, so every event recorded so far is included."""
        self._monitor.poll_now()
        with self._lock:
            events = list(self._events)
            self._events.clear()
        return events

    def close(self) -> None:
        self._monitor._unsubscribe(self)


class SparkExecutorControl:
    """The driver's levers on executors (a cluster manager with separate executor JVMs)."""

    def __init__(self, sc: SparkContext) -> None:
        from dstream.sparkconf import conf_flag

        self._sc = sc
        conf = live_conf(sc)  # settings fixed since the SparkContext started
        # Whether the SparkContext has decommissioning and block migration on
        # (dstream.sparkconf.DECOMMISSION): then remove() decommissions.
        self.decommissions = conf_flag(conf, "spark.decommission.enabled") and conf_flag(
            conf, "spark.storage.decommission.enabled"
        )

    def kill(self, executor: str) -> bool:
        return bool(self._sc._jsc.sc().killExecutor(executor))

    def remove(self, executor: str) -> bool:
        """Take ``executor`` away: decommissioned when the conf allows it (its blocks and
        shuffle files move to the others before it exits), killed otherwise. The
        decommission call is the scheduler backend's (Spark's own dynamic allocation uses
        it; not a public API, so a Spark without it falls back to killing)."""
        if self.decommissions:
            try:
                jvm = self._sc._jvm
                assert jvm is not None
                info_class = jvm.org.apache.spark.scheduler.ExecutorDecommissionInfo
                info = info_class.apply("dstream elastic scale-down", jvm.scala.Option.empty())
                backend = self._sc._jsc.sc().schedulerBackend()
                return bool(backend.decommissionExecutor(executor, info, True, False))
            except Exception:
                log.warning(
                    "decommissioning executor %s failed; killing it", executor, exc_info=True
                )
        return self.kill(executor)

    def request_total(self, n: int) -> bool:
        jvm = self._sc._jvm
        assert jvm is not None
        no_locality = jvm.org.apache.spark.api.python.PythonUtils.toScalaMap(
            jvm.java.util.HashMap()
        )
        return bool(self._sc._jsc.sc().requestTotalExecutors(n, 0, no_locality))


def supports_executor_control(master: str) -> bool:
    """local[N] runs tasks inside the driver JVM: there is no executor to avoid."""
    return not (master == "local" or master.startswith("local["))


class ExecutorMonitor:
    def __init__(
        self,
        feed: TaskEventFeed,
        group_prefix: str,
        *,
        policy: AvoidancePolicy | None = None,
        control: Any = None,
        detector: StragglerDetector | None = None,
        poll_s: float = 0.1,
        keep_intervals: int = 1000,
        monotonic_ms: Callable[[], int] = lambda: _time.monotonic_ns() // 1_000_000,
    ) -> None:
        self._feed = feed
        self._prefix = f"{group_prefix}-"
        self._policy = policy
        self._control = control
        self._detector = detector or StragglerDetector(min_runtime_ms=50)
        self._health = (
            ExecutorHealth(policy.window, policy.strikes, policy.cooldown.ms)
            if policy is not None
            else None
        )
        self._poll_s = poll_s
        self._keep = keep_intervals
        self._monotonic_ms = monotonic_ms
        self._lock = threading.RLock()  # one poll at a time; guards everything below
        self._intervals: dict[int, IntervalTasks] = {}
        self._completed: list[int] = []  # intervals completed, not yet judged
        self._hosts: dict[str, str] = {}  # live executor -> host
        self._most_executors = 0
        self._target: int | None = None  # what we last asked the cluster manager for
        self._scaled_from: int | None = None  # executors before the first elastic step
        # Executors scale_to removed that have not gone yet (a decommissioned one hands its
        # blocks over first): no longer counted as working.
        self._leaving: set[str] = set()
        self._avoided: dict[str, str | None] = {}  # avoided executor -> host
        self._unjudged = 0  # intervals not judged while the executors settle
        # Executors that joined while running, and how many of their own intervals (ones they
        # ran tasks in) are still not judged: a fresh JVM and its first Python workers are slow.
        self._newcomers: dict[str, int] = {}
        # Per running stage, its finished tasks: (job group, executor, ms; inf if outrun).
        self._stage_tasks: dict[tuple[int, int], list[tuple[str | None, str, float]]] = {}
        self._subscribers: list[Subscription] = []
        # Called (on the monitor's thread) with each executor that was removed or lost.
        self._on_removed: list[Callable[[str], None]] = []
        self.actions: list[ExecutorAction] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        feed.poll()  # what happened before this context started is not its business
        self._hosts.update(feed.live_executors())
        self._most_executors = len(self._hosts)

    # ---- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="dstream-executors", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop polling; hand the last events to subscribers; give the SparkContext back the
        executors this monitor removed (it outlives the streaming program)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            try:
                self.poll_now()
            except Exception:  # the SparkContext was stopped first: no events, no executors
                log.debug("executor monitor: last poll failed", exc_info=True)
                return
            if self._avoided:
                assert self._target is not None
                self._target += len(self._avoided)
                self._control.request_total(self._target)
                for executor, host in list(self._avoided.items()):
                    self._record("restore", executor, host)
                self._avoided.clear()
            if self._scaled_from is not None and self._scaled_from != self._target:
                self._target = self._scaled_from
                self._control.request_total(self._target)
                self._record("restore", "", None, "elastic: back to the executors at start")

    def _run(self) -> None:
        while not self._stop.wait(self._poll_s):
            try:
                self.poll_now()
            except Exception:
                # The Py4J gateway goes away when the SparkContext stops under us.
                log.debug("executor monitor poll failed", exc_info=True)

    # ---- what others call ---------------------------------------------------------------------
    def on_executor_removed(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(executor id)`` whenever an executor goes (lost, killed, removed)."""
        with self._lock:
            self._on_removed.append(callback)

    def subscribe(self) -> Subscription:
        sub = Subscription(self)
        with self._lock:
            self._subscribers.append(sub)
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            if sub in self._subscribers:
                self._subscribers.remove(sub)

    def interval_completed(self, time: Time) -> None:
        """The scheduler completed ``time``: judge its executors at the next poll (by then
        the JVM listener bus has delivered the interval's last task ends)."""
        with self._lock:
            self._completed.append(time.ms)

    def tasks_of(self, time: Time) -> IntervalTasks | None:
        with self._lock:
            return self._intervals.get(time.ms)

    @property
    def capacity(self) -> tuple[int, int]:
        """(executors alive now, the most there have been)."""
        with self._lock:
            return len(self._hosts), self._most_executors

    @property
    def live_executors(self) -> dict[str, str]:
        """Executor id -> host, as the driver's listener bus last reported."""
        with self._lock:
            return dict(self._hosts)

    @property
    def decommissions(self) -> bool:
        """Whether an executor removed by scale_to is decommissioned (its blocks move)."""
        return self._control is not None and bool(getattr(self._control, "decommissions", False))

    @property
    def target(self) -> int | None:
        """The executors last asked of the cluster manager (None: never asked)."""
        with self._lock:
            return self._target

    @property
    def working_executors(self) -> dict[str, str]:
        """Live executors less those an elastic step removed and that are still leaving."""
        with self._lock:
            return {e: h for e, h in self._hosts.items() if e not in self._leaving}

    @property
    def avoided(self) -> list[str]:
        with self._lock:
            return sorted(self._avoided)

    @property
    def avoided_executors(self) -> dict[str, str | None]:
        """The executors avoided now, with the host each ran on (None if unknown)."""
        with self._lock:
            return dict(self._avoided)

    def scale_to(self, target: int, remove: list[str], reason: str) -> None:
        """An elastic step (dstream.scheduler.elastic): ask the cluster manager for
        ``target`` executors, removing ``remove`` (live executors) first; recorded as an
        action like an avoidance."""
        if self._control is None:
            raise RuntimeError("scale_to needs the executor control (an elastic policy)")
        with self._lock:
            if self._scaled_from is None:
                self._scaled_from = self._target or len(self._hosts)
            for executor in remove:
                self._control.remove(executor)
                self._leaving.add(executor)
            self._target = target
            self._control.request_total(target)
            kind = "scale up" if not remove else "scale down"
            added = f"+{max(0, target - len(self._hosts))}"
            self._record(kind, ", ".join(remove) or added, None, reason)

    # ---- one poll -----------------------------------------------------------------------------
    def poll_now(self) -> None:
        with self._lock:
            judge, self._completed = self._completed, []
            events = self._feed.poll()
            for event in events:
                self._apply(event)
            now_ms = int(_time.time() * 1000)
            for slow in self._detector.slow_tasks(now_ms):
                interval = self._interval(slow.group)
                if interval is not None:
                    interval.stragglers.add(slow.executor)
            for sub in self._subscribers:
                sub._extend(events)
            for ms in judge:
                self._judge(ms)
            if self._health is not None:
                self._avoid_and_restore(self._monotonic_ms())

    def _interval(self, group: str | None, create: bool = False) -> IntervalTasks | None:
        if group is None or not group.startswith(self._prefix):
            return None
        rest = group[len(self._prefix) :]
        if not rest.isdigit():
            return None  # a checkpoint job's group
        ms = int(rest)
        interval = self._intervals.get(ms)
        if interval is None and create:
            interval = self._intervals[ms] = IntervalTasks()
            while len(self._intervals) > self._keep:
                del self._intervals[min(self._intervals)]
        return interval

    def _apply(self, event: ListenerEvent) -> None:
        match event:
            case StageSubmitted(stage_id, attempt, num_tasks):
                self._detector.stage_submitted((stage_id, attempt), num_tasks)
            case StageCompleted(stage_id=stage_id, attempt=attempt):
                outrun = self._detector.stage_completed((stage_id, attempt))
                finished = self._stage_tasks.pop((stage_id, attempt), [])
                for task in outrun:
                    interval = self._interval(task.group)
                    if interval is not None:
                        interval.stragglers.add(task.executor)
                finished += [(t.group, t.executor, float("inf")) for t in outrun]
                self._slowdowns(finished)
            case TaskStart():
                self._detector.task_started(_timing(event))
                interval = self._interval(event.job_group, create=True)
                if interval is not None:
                    interval.tasks += 1
                    interval.speculative += event.speculative
                    interval.executors.add(event.executor_id)
            case TaskEnd():
                timing = _timing(event)
                # Judged against its peers before its own time joins the median.
                slow = self._detector.finished_slow(timing)
                self._detector.task_ended(timing)
                interval = self._interval(event.job_group, create=True)
                if interval is None:
                    return
                interval.failed += not event.successful and event.reason_kind != "TaskKilled"
                if slow and event.reason_kind != "ExecutorLostFailure":
                    interval.stragglers.add(event.executor_id)
                # Judged against the whole stage once it completes; a task killed because
                # its copy won was outrun.
                if event.successful or event.reason_kind == "TaskKilled":
                    took = float(event.duration_ms) if event.successful else float("inf")
                    stage = (event.stage_id, event.stage_attempt)
                    tasks = self._stage_tasks.setdefault(stage, [])
                    tasks.append((event.job_group, event.executor_id, took))
            case ExecutorAdded(executor_id, host):
                self._hosts[executor_id] = host
                if self._policy is not None:
                    self._newcomers[executor_id] = self._policy.window
                self._most_executors = max(self._most_executors, len(self._hosts))
                self._settle()
            case ExecutorRemoved(executor_id):
                self._hosts.pop(executor_id, None)
                self._leaving.discard(executor_id)
                self._newcomers.pop(executor_id, None)
                self._settle()
                if self._health is not None and executor_id not in self._avoided:
                    self._health.forget(executor_id)
                for callback in list(self._on_removed):
                    callback(executor_id)

    def _slowdowns(self, tasks: list[tuple[str | None, str, float]]) -> None:
        """Each task's time over its stage's median, added to its interval's record."""
        finite = [took for _, _, took in tasks if took != float("inf")]
        if not finite:
            return
        median = max(statistics.median(finite), float(self._detector.min_runtime_ms), 1.0)
        for group, executor, took in tasks:
            interval = self._interval(group)
            if interval is not None:
                interval.slowdowns.setdefault(executor, []).append(took / median)

    def _judge(self, ms: int) -> None:
        interval = self._intervals.get(ms)
        if interval is None or self._health is None:
            return
        ran = set(interval.slowdowns) - set(self._avoided)
        for executor in ran & set(self._newcomers):
            ran.discard(executor)  # one of its own first intervals: its warm-up
            self._newcomers[executor] -= 1
            if self._newcomers[executor] == 0:
                del self._newcomers[executor]
        if self._unjudged > 0:
            self._unjudged -= 1
            return
        assert self._policy is not None
        self._health.interval_done(ran, interval.slowed(self._policy.slowdown) & ran)

    def _settle(self) -> None:
        """The executors changed: a new JVM and its Python workers are slow at first, and
        what a lost executor held is being recomputed. Slowness now says nothing about a
        node, so the next ``window`` intervals are not judged; and a newcomer is not judged
        in the first ``window`` intervals it runs tasks in (it may get none at first, when
        the others take every task)."""
        if self._policy is not None:
            self._unjudged = self._policy.window

    def _avoid_and_restore(self, now_ms: int) -> None:
        assert self._health is not None and self._policy is not None
        for executor in self._health.to_bring_back(now_ms):
            host = self._avoided.pop(executor, None)
            self._health.forget(executor)
            self._target = (self._target or self._most_executors) + 1
            self._control.request_total(self._target)
            self._record("restore", executor, host)
        limit = max(1, int(self._most_executors * self._policy.max_fraction))
        for executor in self._health.to_avoid(now_ms):
            live = len(self._hosts)
            if executor not in self._hosts or len(self._avoided) >= limit or live <= 1:
                self._health.forget(executor)  # gone already, or too few would be left
                continue
            host = self._hosts.get(executor)
            self._avoided[executor] = host
            self._target = (self._target or self._most_executors) - 1
            self._control.kill(executor)
            self._control.request_total(self._target)
            self._record("avoid", executor, host)

    def _record(self, kind: str, executor: str, host: str | None, reason: str = "") -> None:
        assert self._target is not None
        at_ms = int(_time.time() * 1000)
        self.actions.append(ExecutorAction(kind, executor, host, at_ms, self._target, reason))
        if reason:
            return  # an elastic step: dstream.scheduler.elastic logged it
        if kind == "avoid":
            log.warning(
                "dstream: executor %s on %s straggled repeatedly; removed it and running with "
                "%d executors (asks for it back after its cooldown)",
                executor,
                host,
                self._target,
            )
        else:
            log.warning(
                "dstream: cooldown of executor %s passed; asked for %d executors again",
                executor,
                self._target,
            )


def _timing(event: TaskStart | TaskEnd) -> TaskTiming:
    finish = event.finish_time if isinstance(event, TaskEnd) else None
    successful = event.successful if isinstance(event, TaskEnd) else True
    return TaskTiming(
        (event.stage_id, event.stage_attempt),
        event.task_id,
        event.index,
        event.executor_id,
        event.launch_time,
        finish,
        successful,
        event.job_group,
    )
