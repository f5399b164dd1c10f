"""The executor monitor on scripted shim events: per-interval task statistics, stragglers by
the 1.4 x median rule, and executors avoided after repeated strikes, then asked back."""

from __future__ import annotations

from typing import Any

import pytest

from dstream.scheduler.monitor import ExecutorMonitor
from dstream.scheduler.shim import (
    ExecutorAdded,
    ExecutorRemoved,
    ListenerEvent,
    StageCompleted,
    StageSubmitted,
    TaskEnd,
    TaskStart,
)
from dstream.settings import AvoidancePolicy
from dstream.time import Duration, Time

PREFIX = "dstream-app-0"
HOSTS = {"1": "10.0.0.1", "2": "10.0.0.2", "3": "10.0.0.3"}


class FakeFeed:
    def __init__(self, live: dict[str, str]) -> None:
        self.queue: list[ListenerEvent] = []
        self.live = dict(live)

    def poll(self) -> list[ListenerEvent]:
        events, self.queue = self.queue, []
        return events

    def live_executors(self) -> dict[str, str]:
        return dict(self.live)


class FakeControl:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def kill(self, executor: str) -> bool:
        self.calls.append(("kill", executor))
        return True

    def request_total(self, n: int) -> bool:
        self.calls.append(("request_total", n))
        return True


class Clock:
    ms = 0

    def __call__(self) -> int:
        return self.ms


def interval(feed: FakeFeed, t: int, stage: int, durations: dict[str, int]) -> None:
    """One stage of one task per executor; task on executor e runs durations[e] ms."""
    group = f"{PREFIX}-{t}"
    feed.queue.append(StageSubmitted(stage, 0, len(durations), t, group, "stage"))
    for i, ex in enumerate(durations):
        feed.queue.append(
            TaskStart(stage, 0, 10 * stage + i, i, i, 0, ex, HOSTS.get(ex, "?"), t, False, group)
        )
    for i, (ex, ms) in sorted(enumerate(durations.items()), key=lambda x: x[1][1]):
        feed.queue.append(
            TaskEnd(
                stage,
                0,
                10 * stage + i,
                i,
                i,
                0,
                ex,
                HOSTS.get(ex, "?"),
                t,
                t + ms,
                False,
                True,
                "Success",
                None,
                "ResultTask",
                group,
            )
        )
    feed.queue.append(StageCompleted(stage, 0, len(durations), t, t + 500, True, None, group, "s"))


def make(
    policy: AvoidancePolicy | None = None,
) -> tuple[ExecutorMonitor, FakeFeed, FakeControl, Clock]:
    feed, control, clock = FakeFeed(HOSTS), FakeControl(), Clock()
    monitor = ExecutorMonitor(feed, PREFIX, policy=policy, control=control, monotonic_ms=clock)  # type: ignore[arg-type]
    return monitor, feed, control, clock


def complete(monitor: ExecutorMonitor, t: int) -> None:
    monitor.poll_now()  # the interval's events arrive
    monitor.interval_completed(Time(t))
    monitor.poll_now()  # and it is judged


def test_tasks_of_an_interval_are_counted_and_a_slow_executor_named() -> None:
    monitor, feed, _, _ = make()
    interval(feed, 1000, 1, {"1": 100, "2": 110, "3": 400})
    feed.queue.append(TaskStart(1, 0, 99, 2, 2, 1, "1", HOSTS["1"], 1100, True, f"{PREFIX}-1000"))
    # A checkpoint job's group and another context's group are not intervals of this one.
    feed.queue.append(TaskStart(7, 0, 70, 0, 0, 0, "2", "h", 1, False, f"{PREFIX}-checkpoint-1-1"))
    feed.queue.append(TaskStart(8, 0, 80, 0, 0, 0, "2", "h", 1, False, "dstream-app-1-1000"))
    monitor.poll_now()
    tasks = monitor.tasks_of(Time(1000))
    assert tasks is not None
    assert (tasks.tasks, tasks.speculative, tasks.failed) == (4, 1, 0)
    assert tasks.executors == {"1", "2", "3"}
    assert tasks.stragglers == {"3"}  # 400 ms > 1.4 x median(100, 110)
    assert monitor.tasks_of(Time(2000)) is None


def test_without_a_policy_nothing_is_avoided() -> None:
    monitor, feed, control, _ = make()
    for i in range(1, 8):
        interval(feed, i * 1000, i, {"1": 100, "2": 110, "3": 400})
        complete(monitor, i * 1000)
    assert control.calls == [] and monitor.actions == []


def test_an_executor_slow_in_three_of_five_intervals_is_avoided_then_asked_back() -> None:
    policy = AvoidancePolicy(window=5, strikes=3, cooldown=Duration(10_000))
    monitor, feed, control, clock = make(policy)
    slow = {"1": 100, "2": 110, "3": 400}
    fine = {"1": 100, "2": 110, "3": 105}
    for i, durations in enumerate([slow, fine, slow], start=1):
        interval(feed, i * 1000, i, durations)
        complete(monitor, i * 1000)
    assert control.calls == []  # two strikes so far
    interval(feed, 4000, 4, slow)
    complete(monitor, 4000)
    assert control.calls == [("kill", "3"), ("request_total", 2)]
    assert [(a.kind, a.executor, a.host, a.target) for a in monitor.actions] == [
        ("avoid", "3", "10.0.0.3", 2)
    ]
    assert monitor.avoided == ["3"]
    feed.queue.append(ExecutorRemoved("3", "10.0.0.3", 4100, "killed by driver"))
    clock.ms = 9_999
    interval(feed, 5000, 5, {"1": 100, "2": 110})
    complete(monitor, 5000)
    assert len(control.calls) == 2  # still cooling down
    clock.ms = 10_000
    monitor.poll_now()
    assert control.calls[2:] == [("request_total", 3)]
    assert monitor.actions[-1].kind == "restore" and monitor.avoided == []
    feed.queue.append(ExecutorAdded("4", "10.0.0.3", 11_000, 1, False))
    monitor.poll_now()
    assert monitor.live_executors == {"1": "10.0.0.1", "2": "10.0.0.2", "4": "10.0.0.3"}


def test_at_most_a_third_of_the_executors_is_avoided_at_once() -> None:
    monitor, feed, control, _ = make(AvoidancePolicy(window=3, strikes=2))
    for i in range(1, 4):
        # Executors 2 and 3 both slow: only one of them goes.
        interval(feed, i * 1000, i, {"1": 100, "2": 500, "3": 500, "4x": 100, "5x": 100})
        complete(monitor, i * 1000)
    kills = [c for c in control.calls if c[0] == "kill"]
    assert len(kills) == 1


def test_an_executor_that_crashed_meanwhile_is_not_killed() -> None:
    monitor, feed, control, _ = make(AvoidancePolicy(window=3, strikes=2))
    interval(feed, 1000, 1, {"1": 100, "2": 110, "3": 400})
    interval(feed, 2000, 2, {"1": 100, "2": 110, "3": 400})
    feed.queue.append(ExecutorRemoved("3", "10.0.0.3", 2500, "lost"))
    monitor.poll_now()
    monitor.interval_completed(Time(1000))
    monitor.interval_completed(Time(2000))
    monitor.poll_now()  # two strikes, but executor 3 is gone already
    assert control.calls == [] and monitor.actions == []
    assert "3" not in monitor.live_executors


def test_policy_values_are_checked() -> None:
    with pytest.raises(ValueError, match="strikes 4 must be between 1 and window 3"):
        AvoidancePolicy(window=3, strikes=4)
    with pytest.raises(ValueError, match=r"max_fraction 1 must be in \(0, 1\)"):
        AvoidancePolicy(max_fraction=1)


def test_a_task_outrun_by_its_copy_is_slow() -> None:
    monitor, feed, _, _ = make()
    group = f"{PREFIX}-1000"
    feed.queue.append(StageSubmitted(1, 0, 2, 1000, group, "stage"))
    for task_id, ex in [(0, "1"), (1, "2"), (2, "3")]:
        feed.queue.append(
            TaskStart(1, 0, task_id, task_id, task_id, 0, ex, "h", 1000, task_id == 2, group)
        )
    # The copy on executor 3 won; the stage completed while the original still ran.
    feed.queue.append(
        TaskEnd(1, 0, 2, 1, 1, 1, "3", "h", 1000, 1100, True, True, "Success", None, "R", group)
    )
    feed.queue.append(StageCompleted(1, 0, 2, 1000, 1300, True, None, group, "s"))
    complete(monitor, 1000)
    tasks = monitor.tasks_of(Time(1000))
    assert tasks is not None and tasks.stragglers == {"1", "2"}


def test_intervals_right_after_executors_change_are_not_judged() -> None:
    monitor, feed, control, _ = make(AvoidancePolicy(window=2, strikes=1))
    feed.queue.append(ExecutorAdded("4", "10.0.0.4", 500, 1, False))
    slow = {"1": 100, "2": 110, "4": 400}
    for i in range(1, 3):
        interval(feed, i * 1000, i, slow)
        complete(monitor, i * 1000)
    assert control.calls == []  # the newcomer's warm-up is not held against it
    interval(feed, 3000, 3, slow)
    complete(monitor, 3000)
    assert control.calls == [("kill", "4"), ("request_total", 3)]


def test_a_newcomer_is_not_judged_until_it_has_run_its_own_first_intervals() -> None:
    # It joins, the settling intervals pass without giving it work (the others took every
    # task), then its first tasks are cold: those intervals are its warm-up, not strikes.
    monitor, feed, control, _ = make(AvoidancePolicy(window=2, strikes=1))
    feed.queue.append(ExecutorAdded("4", "10.0.0.4", 500, 1, False))
    for i in range(1, 5):
        interval(feed, i * 1000, i, {"1": 100, "2": 110})
        complete(monitor, i * 1000)
    cold = {"1": 100, "2": 110, "4": 400}
    for i in range(5, 7):
        interval(feed, i * 1000, i, cold)
        complete(monitor, i * 1000)
    assert control.calls == []
    interval(feed, 7000, 7, cold)  # still slow after its warm-up: now it counts
    complete(monitor, 7000)
    assert control.calls == [("kill", "4"), ("request_total", 3)]


def test_stopping_gives_the_avoided_executors_back() -> None:
    monitor, feed, control, _ = make(AvoidancePolicy(window=1, strikes=1))
    interval(feed, 1000, 1, {"1": 100, "2": 110, "3": 400})
    complete(monitor, 1000)
    assert monitor.avoided == ["3"]
    monitor.stop()
    assert control.calls == [("kill", "3"), ("request_total", 2), ("request_total", 3)]
    assert monitor.avoided == [] and [a.kind for a in monitor.actions] == ["avoid", "restore"]


def test_one_slow_task_among_several_is_not_a_strike() -> None:
    monitor, feed, control, _ = make(AvoidancePolicy(window=1, strikes=1))
    group = f"{PREFIX}-1000"
    feed.queue.append(StageSubmitted(1, 0, 6, 1000, group, "stage"))
    runs = [("1", 100), ("1", 105), ("2", 100), ("2", 110), ("3", 100), ("3", 500)]
    for task_id, (ex, _) in enumerate(runs):
        feed.queue.append(TaskStart(1, 0, task_id, task_id, task_id, 0, ex, "h", 0, False, group))
    for task_id, (ex, ms) in sorted(enumerate(runs), key=lambda r: r[1][1]):
        feed.queue.append(
            TaskEnd(
                1,
                0,
                task_id,
                task_id,
                task_id,
                0,
                ex,
                "h",
                0,
                ms,
                False,
                True,
                "Success",
                None,
                "ResultTask",
                group,
            )
        )
    complete(monitor, 1000)
    tasks = monitor.tasks_of(Time(1000))
    assert tasks is not None
    assert tasks.stragglers == {"3"}  # the 1.4x rule: one slow task (speculation's view)
    assert tasks.slowed(2.0) == set()  # but only half of executor 3's tasks: no strike
    assert control.calls == []
