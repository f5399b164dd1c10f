"""The chaos run, short (CI): driver and executor kills while input keeps arriving; every
interval of every output equals the oracle: 2 driver kills, the first while a state
checkpoint is being written and the second while an interval's output is being committed
(the second restart resumes from a journal a restarted driver wrote), and 1 executor kill at
a random moment, on one executor (the kill loses every cached block and shuffle output at
once, and the interval waits for the replacement executor to recompute them; every driver
start also starts its executors, so one fewer is a JVM and a Python daemon less per start:
83 -> 63 CPU-s alone, with the gaps between faults cut from 3-5 s to 2-3.5 s). The window
is recovered by ``replay`` (rebuilt from the input files), and checked interval by
interval like every other output. Files arrive until the last driver kill (through the
first restart); the run then waits for every line to be committed.

This is also CI's driver-kill run on the local file system: tests/recovery/test_driver_kill.py
(three kills, random included, on local[2]) runs in ``make test-full``. The full chaos run
(20 driver kills, 10 executor kills, at random) is bench/engine/chaos.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.chaos import Plan, run

pytestmark = [pytest.mark.slow, pytest.mark.cluster]


def test_random_driver_and_executor_kills_lose_and_double_nothing(tmp_path: Path) -> None:
    plan = Plan(
        driver_kills=2,
        executor_kills=1,
        executors=1,
        gap_s=(2.0, 3.5),
        seed=7,
        batch_ms=2000,
        driver_kill_points=("checkpoint", "commit"),
        window_strategy="replay",
        table=True,
        parallelism=2,
    )
    report = run(tmp_path, plan)
    assert report.problems == []
    assert (report.driver_kills, report.restarts) == (2, 2)
    assert report.executor_kills == 1
    assert report.input_lines > 0 and report.intervals > 10
