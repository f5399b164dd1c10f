"""Stragglers: which tasks are slow, and which executors keep being slow. Pure logic, no
Spark: it consumes the JVM shim's task events (:mod:`dstream.scheduler.shim`).

A task is *slow* when it has run longer than ``multiplier`` times the median duration of the
finished tasks of its stage, once at least ``quantile`` of the stage's tasks have finished —
the paper's rule (1.4 x the median), which is also the rule Spark's speculation applies, so
the engine's view and Spark's copies agree::

    stage tasks:   ██ ██ ██ ███ ██ ████████████████      median of finished = 2 units
                                  └ running 16 units > 1.4 x 2  -> slow

A task is judged only against other executors: it is slow only once a task of its stage has
finished on another executor. Tasks that all ran on one executor (local mode's "driver", a
one-executor cluster) differ by noise, not by a slow node.

An executor *straggles in an interval* when one of its tasks of that interval was slow. The
:class:`ExecutorHealth` record remembers that across intervals: an executor that straggled in
``strikes`` of its last ``window`` intervals is to be avoided; after ``cooldown`` it may come
back (doubling the cooldown each time it has to be avoided again, so a persistently slow
node is not churned).
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["ExecutorHealth", "SlowTask", "StragglerDetector", "TaskTiming"]


@dataclass(frozen=True)
class TaskTiming:
    stage: tuple[int, int]  # (stage id, stage attempt)
    task_id: int
    index: int
    executor: str
    launch_ms: int
    finish_ms: int | None = None  # None while running
    successful: bool = True
    group: str | None = None  # the Spark job group (dstream: one per interval)


@dataclass(frozen=True)
class SlowTask:
    stage: tuple[int, int]
    task_id: int
    index: int
    executor: str
    running_ms: int
    threshold_ms: float
    group: str | None


@dataclass
class _Stage:
    num_tasks: int | None = None
    finished: list[int] = field(default_factory=list)
    finished_on: set[str] = field(default_factory=set)  # executors with a finished task
    running: dict[int, TaskTiming] = field(default_factory=dict)

    def has_peers(self, executor: str) -> bool:
        """Whether a task of the stage finished on an executor other than ``executor``."""
        return bool(self.finished_on - {executor})


class StragglerDetector:
    def __init__(
        self, multiplier: float = 1.4, quantile: float = 0.5, min_runtime_ms: int = 0
    ) -> None:
        if multiplier <= 1:
            raise ValueError(f"multiplier {multiplier} must be > 1 (1.4 in the paper)")
        if not 0 < quantile <= 1:
            raise ValueError(f"quantile {quantile} must be in (0, 1]")
        self.multiplier, self.quantile, self.min_runtime_ms = multiplier, quantile, min_runtime_ms
        self._stages: dict[tuple[int, int], _Stage] = {}

    def stage_submitted(self, stage: tuple[int, int], num_tasks: int) -> None:
        self._stages.setdefault(stage, _Stage()).num_tasks = num_tasks

    def stage_completed(self, stage: tuple[int, int]) -> list[TaskTiming]:
        """Forget the stage; returns its tasks still running, which are slow by definition:
        the stage finished without them (a speculative copy won)."""
        s = self._stages.pop(stage, None)
        return [] if s is None else list(s.running.values())

    def task_started(self, task: TaskTiming) -> None:
        self._stages.setdefault(task.stage, _Stage()).running[task.task_id] = task

    def task_ended(self, task: TaskTiming) -> None:
        stage = self._stages.setdefault(task.stage, _Stage())
        stage.running.pop(task.task_id, None)
        if task.successful and task.finish_ms is not None:
            stage.finished.append(task.finish_ms - task.launch_ms)
            stage.finished_on.add(task.executor)

    def threshold_ms(self, stage: tuple[int, int]) -> float | None:
        """The running time above which a task of ``stage`` is slow, or None until enough of
        the stage's tasks have finished to tell."""
        s = self._stages.get(stage)
        if s is None or not s.finished:
            return None
        needed = max(1, int(self.quantile * (s.num_tasks or len(s.finished))))
        if len(s.finished) < needed:
            return None
        return max(self.multiplier * statistics.median(s.finished), self.min_runtime_ms)

    def slow_tasks(self, now_ms: int) -> list[SlowTask]:
        slow = []
        for key, s in self._stages.items():
            limit = self.threshold_ms(key)
            if limit is None:
                continue
            for t in s.running.values():
                running = now_ms - t.launch_ms
                if running > limit and s.has_peers(t.executor):
                    slow.append(
                        SlowTask(key, t.task_id, t.index, t.executor, running, limit, t.group)
                    )
        return slow

    def finished_slow(self, task: TaskTiming) -> bool:
        """Whether a task that just finished had been slow (compared with its peers)."""
        limit = self.threshold_ms(task.stage)
        s = self._stages.get(task.stage)
        return (
            limit is not None
            and s is not None
            and s.has_peers(task.executor)
            and task.finish_ms is not None
            and task.finish_ms - task.launch_ms > limit
        )


@dataclass
class _Record:
    history: deque[bool]
    avoided_until: int | None = None
    cooldown_ms: int = 0
    times_avoided: int = 0


class ExecutorHealth:
    """Per executor, whether it straggled in each of its recent intervals."""

    def __init__(self, window: int = 5, strikes: int = 3, cooldown_ms: int = 30_000) -> None:
        if not 1 <= strikes <= window:
            raise ValueError(f"strikes {strikes} must be between 1 and window {window}")
        self.window, self.strikes, self.base_cooldown_ms = window, strikes, cooldown_ms
        self._records: dict[str, _Record] = {}

    def _record(self, executor: str) -> _Record:
        rec = self._records.get(executor)
        if rec is None:
            rec = self._records[executor] = _Record(deque(maxlen=self.window))
        return rec

    def interval_done(self, executors: Iterable[str], stragglers: Iterable[str]) -> None:
        """One interval finished: ``executors`` ran its tasks, ``stragglers`` were slow."""
        slow = set(stragglers)
        for executor in executors:
            self._record(executor).history.append(executor in slow)

    def to_avoid(self, now_ms: int) -> list[str]:
        """Executors that straggled in ``strikes`` of their last ``window`` intervals and are
        not avoided already; marks them avoided until their cooldown passes."""
        chosen = []
        for executor, rec in self._records.items():
            if rec.avoided_until is not None:
                continue
            if sum(rec.history) >= self.strikes:
                rec.times_avoided += 1
                rec.cooldown_ms = self.base_cooldown_ms * 2 ** (rec.times_avoided - 1)
                rec.avoided_until = now_ms + rec.cooldown_ms
                rec.history.clear()
                chosen.append(executor)
        return chosen

    def to_bring_back(self, now_ms: int) -> list[str]:
        """Avoided executors whose cooldown has passed: give them work again (they are judged
        afresh, and avoided for twice as long if they straggle again)."""
        back = []
        for executor, rec in self._records.items():
            if rec.avoided_until is not None and now_ms >= rec.avoided_until:
                rec.avoided_until = None
                back.append(executor)
        return back

    def is_avoided(self, executor: str) -> bool:
        rec = self._records.get(executor)
        return rec is not None and rec.avoided_until is not None

    def forget(self, executor: str) -> None:
        self._records.pop(executor, None)
