"""Straggler statistics: the 1.4 x median rule per stage, and executors that keep straggling."""

from __future__ import annotations

import pytest

from dstream.scheduler.stragglers import ExecutorHealth, StragglerDetector, TaskTiming

STAGE = (3, 0)


def task(tid: int, executor: str, launch: int, finish: int | None = None) -> TaskTiming:
    return TaskTiming(STAGE, tid, tid, executor, launch, finish, True, "dstream-1000")


def test_a_task_slower_than_1_4_times_the_median_is_slow() -> None:
    d = StragglerDetector()
    d.stage_submitted(STAGE, 4)
    for tid in range(4):
        d.task_started(task(tid, "e1" if tid < 3 else "e2", 0))
    assert d.slow_tasks(10_000) == []  # nothing finished: no median yet
    d.task_ended(task(0, "e1", 0, 100))
    assert d.slow_tasks(10_000) == []  # 1 of 4 finished: below the 0.5 quantile
    d.task_ended(task(1, "e1", 0, 120))
    assert d.threshold_ms(STAGE) == pytest.approx(1.4 * 110)
    assert d.slow_tasks(150) == []  # running 150 ms < 154 ms
    slow = d.slow_tasks(160)
    # Task 2 runs on e1, like every finished task: not judged against its own executor.
    assert [(s.task_id, s.executor, s.running_ms) for s in slow] == [(3, "e2", 160)]
    d.task_ended(task(2, "e1", 0, 130))
    assert [s.task_id for s in d.slow_tasks(200)] == [3]
    assert d.finished_slow(task(3, "e2", 0, 400))
    assert not d.finished_slow(task(3, "e2", 0, 150))


def test_tasks_of_a_single_executor_are_never_judged_against_each_other() -> None:
    """Local mode's one executor ("driver"): its tasks differ by noise, never by a slow
    node; a two-task stage whose second task took 3x the first is no straggler."""
    d = StragglerDetector()
    d.stage_submitted(STAGE, 2)
    d.task_started(task(1, "driver", 0))
    d.task_ended(task(0, "driver", 0, 10))
    assert d.threshold_ms(STAGE) == pytest.approx(14)
    assert d.slow_tasks(30) == []
    assert not d.finished_slow(task(1, "driver", 0, 30))
    d.task_ended(task(1, "driver", 0, 30))
    assert d.stage_completed(STAGE) == []


def test_a_minimum_runtime_keeps_tiny_stages_from_looking_slow() -> None:
    d = StragglerDetector(min_runtime_ms=50)
    d.stage_submitted(STAGE, 2)
    d.task_started(task(1, "e2", 0))
    d.task_ended(task(0, "e1", 0, 5))
    assert d.threshold_ms(STAGE) == 50
    assert d.slow_tasks(40) == [] and len(d.slow_tasks(60)) == 1


def test_failed_tasks_do_not_count_towards_the_median_and_stages_are_forgotten() -> None:
    d = StragglerDetector()
    d.stage_submitted(STAGE, 2)
    d.task_ended(TaskTiming(STAGE, 0, 0, "e1", 0, 5, False))
    assert d.threshold_ms(STAGE) is None
    assert d.stage_completed(STAGE) == []
    assert d.slow_tasks(10**9) == []


def test_tasks_still_running_when_their_stage_completes_are_returned() -> None:
    d = StragglerDetector()
    d.stage_submitted(STAGE, 2)
    d.task_started(task(0, "e1", 0))
    d.task_started(task(1, "e2", 0))
    d.task_ended(task(0, "e1", 0, 100))
    d.task_ended(task(2, "e1", 50, 150))  # the speculative copy of task 1 won
    assert [t.task_id for t in d.stage_completed(STAGE)] == [1]
    assert d.stage_completed(STAGE) == []


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match=r"multiplier 1 must be > 1 \(1.4 in the paper\)"):
        StragglerDetector(multiplier=1)
    with pytest.raises(ValueError, match=r"quantile 0 must be in \(0, 1\]"):
        StragglerDetector(quantile=0)
    with pytest.raises(ValueError, match="strikes 6 must be between 1 and window 5"):
        ExecutorHealth(window=5, strikes=6)


def test_an_executor_that_straggles_repeatedly_is_avoided_then_brought_back() -> None:
    h = ExecutorHealth(window=4, strikes=2, cooldown_ms=1000)
    h.interval_done(["e1", "e2"], ["e2"])
    assert h.to_avoid(0) == []  # one strike
    h.interval_done(["e1", "e2"], [])
    h.interval_done(["e1", "e2"], ["e2"])
    assert h.to_avoid(100) == ["e2"] and h.is_avoided("e2") and not h.is_avoided("e1")
    assert h.to_avoid(200) == []  # already avoided
    assert h.to_bring_back(1000) == []
    assert h.to_bring_back(1100) == ["e2"] and not h.is_avoided("e2")
    # Straggling again right away: avoided for twice as long.
    h.interval_done(["e2"], ["e2"])
    h.interval_done(["e2"], ["e2"])
    assert h.to_avoid(2000) == ["e2"]
    assert h.to_bring_back(3500) == [] and h.to_bring_back(4000) == ["e2"]


def test_old_strikes_slide_out_of_the_window() -> None:
    h = ExecutorHealth(window=3, strikes=2)
    h.interval_done(["e1"], ["e1"])
    for _ in range(3):
        h.interval_done(["e1"], [])
    h.interval_done(["e1"], ["e1"])
    assert h.to_avoid(0) == []
