"""kill -9 the driver of a real streaming application (local file system), restart it, and
check that every input line was output exactly once and the state is what a run without
failures computes. The machinery is in :mod:`tests.recovery.harness`; the same test runs on
HDFS in tests/hdfs."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.drivers import LocalStorage
from tests.recovery.harness import expected, run, wrong_windows

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(
    "kills",
    [
        # CI's driver kills at a checkpoint and at a commit are the chaos run's
        # (tests/recovery/test_chaos.py, with its window on replay too).
        pytest.param(["checkpoint", "random", "commit"], marks=pytest.mark.full),
        pytest.param(
            ["random", "checkpoint", "random", "commit", "random"], marks=pytest.mark.full
        ),
    ],
)
def test_killing_the_driver_loses_and_doubles_nothing(tmp_path: Path, kills: list[str]) -> None:
    # The oracle is plain Python (every input line once, the word counts over all of
    # them); a run without failures gives exactly it (make test-full runs one).
    expected_lines, expected_totals = expected()
    # The window is recovered by replay (no checkpoint of it: a restarted driver rebuilds it
    # from the input files); the totals and sessions from their checkpoints.
    storage = LocalStorage(tmp_path / "faulty")
    got_lines, got_totals, restored = run(storage, kills, ["--window-strategy", "replay"])
    assert restored == [False] + [True] * len(kills)
    # Nothing missing, nothing doubled, state exact.
    assert got_lines == expected_lines
    assert got_totals == expected_totals
    # Every window equals the counts of the lines committed in its 10 s (and the oracle
    # tells a 9 s window from it).
    assert wrong_windows(storage) == []
    assert wrong_windows(storage, window_ms=9_000) != []


@pytest.mark.full
def test_a_run_without_failures_gives_the_oracle(tmp_path: Path) -> None:
    expected_lines, expected_totals = expected()
    lines, totals, restored = run(LocalStorage(tmp_path / "reference"), [])
    assert restored == [False]
    assert (lines, totals) == (expected_lines, expected_totals)
