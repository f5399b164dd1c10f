"""The chaos run, short (CI): driver and executor kills at random moments while input keeps
arriving; every interval of every output equals the oracle: 2 driver kills (the second
restart resumes from a journal a restarted driver wrote) and 1 executor kill, on two
executors (one is left to run the interval while the other is replaced; every driver start
also starts its executors, so each one fewer is a JVM and a Python daemon less per start).
The full run (20 driver kills, 10 executor kills) is bench/chaos.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.chaos import Plan, run

pytestmark = [pytest.mark.slow, pytest.mark.cluster]


def test_random_driver_and_executor_kills_lose_and_double_nothing(tmp_path: Path) -> None:
    plan = Plan(
        driver_kills=2, executor_kills=1, executors=2, gap_s=(3.0, 5.0), seed=7, batch_ms=2000
    )
    report = run(tmp_path, plan)
    assert report.problems == []
    assert (report.driver_kills, report.restarts) == (2, 2)
    assert report.executor_kills == 1
    assert report.input_lines > 0 and report.intervals > 10
