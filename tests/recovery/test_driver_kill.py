"""kill -9 the driver of a real streaming application (local file system), restart it, and
check that every input line was output exactly once and the state is what a run without
failures computes. The machinery is in :mod:`tests.recovery.harness`; the same test runs on
HDFS in tests/hdfs."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.drivers import LocalStorage
from tests.recovery.harness import expected, run

pytestmark = pytest.mark.slow


def test_killing_the_driver_loses_and_doubles_nothing(tmp_path: Path) -> None:
    expected_lines, expected_totals = expected()

    reference_lines, reference_totals, restored = run(LocalStorage(tmp_path / "reference"), [])
    assert restored == [False]
    assert reference_lines == expected_lines
    assert reference_totals == expected_totals

    kills = ["random", "checkpoint", "random", "commit", "random"]
    got_lines, got_totals, restored = run(LocalStorage(tmp_path / "faulty"), kills)
    assert restored == [False, True, True, True, True, True]
    # Nothing missing, nothing doubled, state exact: the same as the run without failures.
    assert got_lines == reference_lines
    assert got_totals == reference_totals
