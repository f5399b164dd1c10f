"""The JVM shim on the session's local[2] SparkContext.

Needs the jar built by ``make shim`` (``bash jvm-shim/build.sh``); without it these tests fail
with the ShimMissingError message rather than skip.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dstream.scheduler.shim import (
    JobEnd,
    JobStart,
    ListenerEvent,
    ShimMissingError,
    StageSubmitted,
    TaskEnd,
    TaskEventFeed,
    TaskStart,
)

DEADLINE_S = 60.0


def collect_until(
    poll: Callable[[], list[ListenerEvent]], done: Callable[[list[ListenerEvent]], bool], what: str
) -> list[ListenerEvent]:
    """Calls ``poll`` until ``done(events so far)`` holds; fails after DEADLINE_S seconds."""
    events: list[ListenerEvent] = []
    deadline = time.monotonic() + DEADLINE_S
    idle = threading.Event()  # never set: wait() is a plain bounded pause
    while True:
        events.extend(poll())
        if done(events):
            return events
        if time.monotonic() > deadline:
            kinds = [type(e).__name__ for e in events]
            pytest.fail(f"timed out after {DEADLINE_S}s waiting for {what}; got {kinds}")
        # Spark's listener bus delivers events asynchronously, some time after the action
        # returned; pause briefly between polls instead of spinning on Py4J calls.
        idle.wait(0.05)


def run_in_group(sc: Any, group: str, action: Callable[[], object]) -> object:
    sc.setJobGroup(group, f"shim test {group}")
    try:
        return action()
    finally:
        sc._jsc.clearJobGroup()


def jobs_of(events: list[ListenerEvent], group: str) -> list[int]:
    return [e.job_id for e in events if isinstance(e, JobStart) and e.job_group == group]


def job_ended(group: str) -> Callable[[list[ListenerEvent]], bool]:
    return lambda events: any(isinstance(e, JobEnd) and e.job_group == group for e in events)


@pytest.fixture
def feed(sc: Any) -> TaskEventFeed:
    feed = TaskEventFeed.attach(sc)
    feed.poll()  # drop whatever earlier tests left in the shared recorder
    return feed


def test_successful_job_reports_every_task(sc: Any, feed: TaskEventFeed) -> None:
    result = run_in_group(sc, "g1", lambda: sc.parallelize(range(100), 4).map(lambda x: x).count())
    assert result == 100

    events = collect_until(feed.poll, job_ended("g1"), "JOB_END of group g1")
    (job_id,) = jobs_of(events, "g1")
    (job_start,) = [e for e in events if isinstance(e, JobStart) and e.job_id == job_id]
    (stage_id,) = job_start.stage_ids
    (job_end,) = [e for e in events if isinstance(e, JobEnd) and e.job_id == job_id]
    assert job_end.successful
    assert job_end.failure_reason is None
    submitted = [e for e in events if isinstance(e, StageSubmitted) and e.stage_id == stage_id]
    assert [(s.num_tasks, s.job_group) for s in submitted] == [(4, "g1")]

    starts = [e for e in events if isinstance(e, TaskStart) and e.stage_id == stage_id]
    ends = [e for e in events if isinstance(e, TaskEnd) and e.stage_id == stage_id]
    assert len(starts) == 4
    assert len(ends) == 4
    assert sorted(e.partition for e in starts) == [0, 1, 2, 3]
    assert {e.task_id for e in starts} == {e.task_id for e in ends}
    for start in starts:
        assert start.job_group == "g1"
        assert start.executor_id == "driver"
        assert not start.speculative
    for end in ends:
        assert end.job_group == "g1"
        assert end.executor_id == "driver"
        assert end.successful
        assert end.reason_kind == "Success"
        assert end.reason is None
        assert end.task_type == "ResultTask"
        assert end.finish_time >= end.launch_time > 0
        assert not end.speculative
    assert feed.dropped() == 0


def test_failing_task_reports_the_exception(sc: Any, feed: TaskEventFeed) -> None:
    def explode(x: int) -> int:
        raise ValueError(f"shim-boom {x}")

    with pytest.raises(Exception, match="shim-boom"):
        run_in_group(sc, "g-fail", lambda: sc.parallelize(range(4), 2).map(explode).count())

    def all_tasks_ended(events: list[ListenerEvent]) -> bool:
        # After the job is aborted, tasks that were still running end *after* JOB_END.
        stages = {
            s
            for e in events
            if isinstance(e, JobStart) and e.job_group == "g-fail"
            for s in e.stage_ids
        }
        started = {e.task_id for e in events if isinstance(e, TaskStart) and e.stage_id in stages}
        ended = {e.task_id for e in events if isinstance(e, TaskEnd) and e.stage_id in stages}
        return job_ended("g-fail")(events) and bool(started) and started <= ended

    events = collect_until(feed.poll, all_tasks_ended, "JOB_END and every TASK_END of g-fail")
    (job_end,) = [e for e in events if isinstance(e, JobEnd) and e.job_group == "g-fail"]
    assert not job_end.successful
    assert job_end.failure_reason is not None
    assert "shim-boom" in job_end.failure_reason

    ends = [e for e in events if isinstance(e, TaskEnd) and e.job_group == "g-fail"]
    # The task that raised is an ExceptionFailure; one still running when the job was
    # aborted (a slow machine) is killed instead.
    failed = [e for e in ends if not e.successful and e.reason_kind != "TaskKilled"]
    assert failed, ends
    for end in failed:
        assert end.reason_kind == "ExceptionFailure"
        assert end.reason is not None
        assert "ValueError" in end.reason
        assert "shim-boom" in end.reason
        assert "\n" in end.reason  # the Python traceback survives escaping
        assert end.finish_time >= end.launch_time


def test_attaching_twice_shares_one_recorder(sc: Any, feed: TaskEventFeed) -> None:
    again = TaskEventFeed.attach(sc)
    assert again.recorder == feed.recorder

    run_in_group(sc, "g-twice", lambda: sc.parallelize(range(10), 2).count())
    # Both feeds drain the same buffer: each event comes out of exactly one of them.
    events = collect_until(lambda: feed.poll(10) + again.poll(10), job_ended("g-twice"), "JOB_END")
    (job_id,) = jobs_of(events, "g-twice")
    starts = [e for e in events if isinstance(e, TaskStart) and e.job_group == "g-twice"]
    ends = [e for e in events if isinstance(e, TaskEnd) and e.job_group == "g-twice"]
    assert len(starts) == 2
    assert len(ends) == 2
    assert len({e.task_id for e in ends}) == 2
    assert sum(isinstance(e, JobEnd) and e.job_id == job_id for e in events) == 1


def test_running_tasks_are_visible_before_they_end(
    sc: Any, feed: TaskEventFeed, tmp_path: Path
) -> None:
    release = tmp_path / "release"

    def hold(it: Iterable[int]) -> Iterator[int]:
        # Runs in a Python worker: block until the test creates the file (bounded).
        pause = threading.Event()
        deadline = time.monotonic() + DEADLINE_S
        while not release.exists() and time.monotonic() < deadline:
            pause.wait(0.05)
        yield sum(it)

    outcome: list[object] = []

    def run() -> None:
        outcome.append(
            run_in_group(
                sc, "g-running", lambda: sc.parallelize(range(8), 2).mapPartitions(hold).sum()
            )
        )

    job = threading.Thread(target=run, daemon=True)
    job.start()
    try:

        def two_running(events: list[ListenerEvent]) -> bool:
            starts = [e for e in events if isinstance(e, TaskStart) and e.job_group == "g-running"]
            return len(starts) == 2

        events = collect_until(feed.poll, two_running, "two TASK_START of g-running")
        assert not [e for e in events if isinstance(e, TaskEnd) and e.job_group == "g-running"]
        now_ms = time.time() * 1000  # the JVM stamps launch_time with the same wall clock
        for start in events:
            if isinstance(start, TaskStart) and start.job_group == "g-running":
                running_for_ms = now_ms - start.launch_time
                assert -1000 < running_for_ms < DEADLINE_S * 1000
    finally:
        release.touch()
        job.join(DEADLINE_S)
    assert outcome == [28]
    events += collect_until(feed.poll, job_ended("g-running"), "JOB_END of g-running")
    ends = [e for e in events if isinstance(e, TaskEnd) and e.job_group == "g-running"]
    assert len(ends) == 2
    assert all(e.successful for e in ends)


def test_missing_jar_is_reported_with_how_to_build(sc: Any, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-shim.jar"
    with pytest.raises(ShimMissingError, match="make shim") as info:
        TaskEventFeed.attach(sc, jar=missing)
    assert str(missing) in str(info.value)
