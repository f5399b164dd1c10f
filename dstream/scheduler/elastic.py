"""Elasticity: backpressure on the sources and executors that follow the load.

Two rules, pure and unit-tested (tests/unit/test_elastic.py), and the listener that applies
them once per completed interval, on the listener thread (never the scheduler's):

- :class:`RateEstimator` (``StreamingSettings(backpressure=True)``): a PID controller per
  source on the rate it may read, from what an interval read and how long it took. The
  error is the rate read less the rate processed; the integral term is the scheduling delay
  (records waiting, in rate terms); the result never falls below ``min_rate``. This is the
  law pyspark.streaming's ``PIDRateEstimator`` applied, with its defaults (proportional 1,
  integral 0.2, derivative 0, 100 records/s at least). The rate becomes each source's cap
  for the intervals it cuts next: Kafka reads at most rate x interval / partitions offsets
  per partition (its ranges are journaled, so a recomputation reads the same offsets), a
  receiver stops taking blocks once rate x interval records wait (TCP then slows the
  client). A file source is not capped: it takes whole files, and a file is never split
  across intervals.
- :class:`ScalingRule` (``StreamingSettings(elastic=ElasticPolicy(...))``): load is
  processing time (``BatchInfo.work_ms``: wall time from the first job's start to the last
  one's end) over the interval; a run of ``up_after`` loaded intervals (or a backlog)
  doubles the executors, a run of ``down_after`` idle ones halves them, within the policy's
  bounds, then ``cooldown`` of batch time passes before the next step. Batch time, not the
  wall clock: the same input gives the same decisions under a ManualClock.

:class:`ElasticController` applies a step through the executor monitor (``scale_to``: the
cluster manager's ``requestTotalExecutors`` and ``killExecutor``, the same levers executor
avoidance uses), removing the newest executors that run no receiver, and rescales every
keyed state that can rescale by the same factor from the next interval (narrow split or
merge: dstream.streams.rescale). Before a scale-down it checkpoints every state at the
interval just completed and removes the executors only once the states are built on that
checkpoint: what they held is then rebuilt from it, an interval or two of lineage, exactly
as after a failure (outputs stay exact) and cheaply (SPATE's point: recovery starts after
the scale change, not before it). Without that, a removed executor's state would be
recomputed from the last scheduled checkpoint, costly intervals included, and that
recomputation would look like load.
"""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dstream.listener import StreamingListener
from dstream.recovery.compatibility import left_out

if TYPE_CHECKING:
    from dstream.scheduler.checkpointer import Checkpointer
    from dstream.scheduler.monitor import ExecutorMonitor
    from dstream.settings import ElasticPolicy
    from dstream.streams.graph import DStreamGraph

__all__ = ["ElasticController", "RateEstimator", "ScaleStep", "ScalingRule"]

log = logging.getLogger(__name__)


class RateEstimator:
    """The rate (records per second) a source may read next, from each completed interval:
    ``update(batch_ms, records, processing_ms, scheduling_ms)`` returns the new rate, or
    None while there is nothing to learn from (no record read, or no time passed)."""

    def __init__(
        self,
        batch_ms: int,
        *,
        proportional: float = 1.0,
        integral: float = 0.2,
        derivative: float = 0.0,
        min_rate: float = 100.0,
    ) -> None:
        if batch_ms <= 0:
            raise ValueError(f"RateEstimator batch_ms {batch_ms} must be > 0")
        for name, value in (("proportional", proportional), ("integral", integral)):
            if value < 0:
                raise ValueError(f"RateEstimator {name} {value} must be >= 0")
        if min_rate <= 0:
            raise ValueError(f"RateEstimator min_rate {min_rate} must be > 0 (records/s)")
        self._batch_ms = batch_ms
        self._p, self._i, self._d = proportional, integral, derivative
        self._min = min_rate
        self._last_ms: int | None = None
        self._rate: float | None = None
        self._error = 0.0

    @property
    def rate(self) -> float | None:
        return self._rate

    def update(
        self, batch_ms: int, records: int, processing_ms: int, scheduling_ms: int
    ) -> float | None:
        if records <= 0 or processing_ms <= 0:
            return None
        if self._last_ms is not None and batch_ms <= self._last_ms:
            return None  # an older interval completing late says nothing new
        processed = records / processing_ms * 1000  # records/s this interval managed
        if self._rate is None:  # the first interval: start from what was processed
            self._last_ms, self._rate = batch_ms, processed
            return self._rate
        assert self._last_ms is not None
        since_s = (batch_ms - self._last_ms) / 1000
        error = self._rate - processed
        backlog = scheduling_ms * processed / self._batch_ms  # records/s still waiting
        change = (error - self._error) / since_s
        rate = self._rate - self._p * error - self._i * backlog - self._d * change
        self._last_ms, self._error = batch_ms, error
        self._rate = max(rate, self._min)
        return self._rate


@dataclass(frozen=True)
class ScaleStep:
    """A decision: go from ``before`` executors to ``after``, and why."""

    before: int
    after: int
    reason: str

    @property
    def factor(self) -> float:
        return self.after / self.before


class ScalingRule:
    """The policy's rule over completed intervals (see the module docstring). ``observe``
    takes each interval's batch time, processing time, the backlog and the executors now
    live, and returns a :class:`ScaleStep` when the executors should change."""

    def __init__(self, policy: ElasticPolicy, batch_ms: int) -> None:
        self._policy = policy
        self._batch_ms = batch_ms
        self._loaded = 0  # intervals in a row above scale_up
        self._idle = 0  # intervals in a row below scale_down
        self._quiet_until_ms: int | None = None  # cooldown after a step (batch time)

    def observe(
        self, batch_ms: int, processing_ms: int, backlog: int, executors: int
    ) -> ScaleStep | None:
        policy = self._policy
        if self._quiet_until_ms is not None and batch_ms <= self._quiet_until_ms:
            return None  # the last step's executors are joining or leaving: not counted
        load = processing_ms / self._batch_ms
        self._loaded = self._loaded + 1 if load > policy.scale_up else 0
        self._idle = self._idle + 1 if load < policy.scale_down and backlog == 0 else 0
        if executors < 1:
            return None  # every executor lost: a failure, not a load to scale for
        step: ScaleStep | None = None
        if executors < policy.min_executors:
            step = ScaleStep(executors, policy.min_executors, "below min_executors")
        elif executors > policy.max_executors:
            step = ScaleStep(executors, policy.max_executors, "above max_executors")
        elif backlog >= policy.backlog_up and executors < policy.max_executors:
            after = min(policy.max_executors, 2 * executors)
            step = ScaleStep(executors, after, f"backlog of {backlog} intervals")
        elif self._loaded >= policy.up_after and executors < policy.max_executors:
            after = min(policy.max_executors, 2 * executors)
            step = ScaleStep(
                executors,
                after,
                f"processing {load:.2f}x the interval for {self._loaded} intervals",
            )
        elif self._idle >= policy.down_after and executors > policy.min_executors:
            after = max(policy.min_executors, executors // 2)
            step = ScaleStep(
                executors, after, f"processing {load:.2f}x the interval for {self._idle} intervals"
            )
        if step is not None:
            self.hold(batch_ms)
        return step

    def hold(self, batch_ms: int) -> None:
        """A step was taken at ``batch_ms``: the intervals up to ``cooldown`` after it are
        not counted (a step taken later than decided restarts the cooldown from there)."""
        self._loaded = self._idle = 0
        self._quiet_until_ms = batch_ms + self._policy.cooldown.ms


def rescaled_partitions(partitions: int, step: ScaleStep) -> int:
    """A state's partition count after ``step``: scaled by the same factor (doubling and
    halving keep it a narrow split or merge), at least 1."""
    return max(1, math.floor(partitions * step.factor + 0.5))


class ElasticController(StreamingListener):
    """Applies the two rules after every completed interval (see the module docstring)."""

    def __init__(
        self,
        graph: DStreamGraph,
        monitor: ExecutorMonitor | None,
        policy: ElasticPolicy | None,
        *,
        backpressure: bool,
        min_rate: float = 100.0,
        checkpointer: Checkpointer | None = None,
    ) -> None:
        batch_ms = graph.batch_duration.ms
        self._graph = graph
        self._checkpointer = checkpointer
        self._monitor = monitor
        self._policy = policy
        self._rule = None if policy is None else ScalingRule(policy, batch_ms)
        self._rates = (
            {s.id: RateEstimator(batch_ms, min_rate=min_rate) for s in graph.inputs}
            if backpressure
            else {}
        )
        if policy is not None and monitor is not None and not monitor.decommissions:
            log.warning(
                "dstream elastic: executors removed by the policy are killed, and what they "
                "held is rebuilt from a checkpoint taken just before (the intervals since "
                "then are computed again). Start the SparkContext with "
                "dstream.sparkconf.DECOMMISSION (recommended_conf(..., decommission=True)) "
                "to have them hand their blocks over instead"
            )
        self._lock = threading.Lock()
        # A scale-down decided at (step, batch ms), waiting for the states' checkpoint.
        self._draining: tuple[ScaleStep, int] | None = None

    # ---- the listener --------------------------------------------------------------------
    def onBatchCompleted(self, batchCompleted: Any) -> None:
        info = batchCompleted.batchInfo()
        work_ms = info.work_ms if info.work_ms is not None else info.processing_delay_ms or 0
        with self._lock:
            for source in self._graph.inputs:
                estimator = self._rates.get(source.id)
                if estimator is None:
                    continue
                rate = estimator.update(
                    info.batch_time.ms,
                    info.input_records.get(source.id, 0),
                    work_ms,
                    info.scheduling_delay_ms or 0,
                )
                if rate is not None:
                    source.set_rate_limit(rate)
            if self._rule is None or self._monitor is None or info.failed:
                return
            now_ms = info.batch_time.ms
            live = self._monitor.working_executors
            step = self._rule.observe(now_ms, work_ms, info.backlog, len(live))
            if self._draining is not None:
                pending, since_ms = self._draining
                if step is not None and step.after > step.before:
                    log.info("dstream elastic: scale down cancelled (%s)", step.reason)
                    self._draining = None  # the load came back before the checkpoint
                elif self._drained(since_ms, now_ms):
                    self._draining = None
                    self._rule.hold(now_ms)
                    self._apply(pending, self._monitor.working_executors)
                    return
                else:
                    return
            if step is None:
                return
            if step.after < step.before and self._checkpoint_first(now_ms):
                self._draining = (step, now_ms)
                return
            self._apply(step, live)

    # ---- a scale-down: checkpoint first --------------------------------------------------
    def _checkpointed_states(self) -> list[Any]:
        from dstream.streams.state_base import StateStream

        return [
            s
            for s in self._graph.streams
            if isinstance(s, StateStream) and s.checkpoint_every is not None
        ]

    def _checkpoint_first(self, now_ms: int) -> bool:
        """Before executors are removed, checkpoint every state at the interval just
        completed, so that what they held is rebuilt from that checkpoint (an interval or
        two of lineage) instead of from the last scheduled one (up to a checkpoint interval
        of recomputation, costly work included). False when no state needs it."""
        from dstream.time import Time

        checkpointer = self._checkpointer
        states = self._checkpointed_states()
        if checkpointer is None or not states or self._monitor_decommissions():
            return False  # (decommissioned executors hand their blocks over: no rebuild)
        for state in states:
            rdd = state.remembered_rdd(Time(now_ms))
            if rdd is not None:
                checkpointer.submit(state, Time(now_ms), rdd)
        log.info("dstream elastic: scale down after a checkpoint of %d state(s)", len(states))
        return True

    def _monitor_decommissions(self) -> bool:
        return self._monitor is not None and self._monitor.decommissions

    def _drained(self, since_ms: int, now_ms: int) -> bool:
        """Every checkpointed state's newest interval is built on a checkpoint taken at or
        after the scale-down decision (or the wait has lasted a checkpoint interval x 3:
        a checkpoint that keeps failing does not hold the executors for ever)."""
        from dstream.time import Time

        waited = now_ms - since_ms
        for state in self._checkpointed_states():
            base = state.built_on(Time(now_ms))
            every = state.checkpoint_every
            if (base is None or base < since_ms) and waited < 3 * every.ms:
                return False
        return True

    # ---- a step --------------------------------------------------------------------------
    def _apply(self, step: ScaleStep, live: dict[str, str]) -> None:
        assert self._monitor is not None and self._policy is not None
        remove: list[str] = []
        if step.after < step.before:
            keep = self._receiver_executors()
            spare = sorted((e for e in live if e not in keep), key=_executor_order, reverse=True)
            remove = spare[: step.before - step.after]
        after = step.before - len(remove) if step.after < step.before else step.after
        if after == step.before:
            log.info("dstream elastic: %s, but every executor runs a receiver", step.reason)
            return
        log.warning(
            "dstream elastic: %d -> %d executors (%s)%s",
            step.before,
            after,
            step.reason,
            f"; removing {', '.join(remove)}" if remove else "",
        )
        self._monitor.scale_to(after, remove, f"scale {step.before}->{after}: {step.reason}")
        if self._policy.rescale_state:
            self._rescale_states(ScaleStep(step.before, after, step.reason))

    def _receiver_executors(self) -> set[str]:
        """Executors running a receiver now: never removed (the receiver would restart,
        and its clients reconnect, for nothing)."""
        found: set[str] = set()
        for source in self._graph.inputs:
            found |= {executor for executor, _ in source.receivers().values()}
        return found

    def _rescale_states(self, step: ScaleStep) -> None:
        from dstream.streams.state_base import StateStream

        for stream in self._graph.streams:
            if not isinstance(stream, StateStream) or stream.fixed_partitions is not None:
                continue
            if left_out(stream.recovery_modes, "elastic") is not None:
                continue  # its count is fixed by its recovery mode (the table says why)
            have = stream.schedule.latest
            want = rescaled_partitions(have, step)
            if want != have:
                try:
                    stream.rescale(want)
                except Exception:  # the context is stopping under us
                    log.warning(
                        "dstream elastic: rescale of %s failed", stream.label, exc_info=True
                    )


def _executor_order(executor: str) -> tuple[int, str]:
    return (int(executor), executor) if executor.isdigit() else (-1, executor)
