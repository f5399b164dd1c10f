"""A run-time rescale survives a driver kill (SPATE: a rescale is never rolled back).

A keyed total starts at 4 partitions, ``rescale(8)`` takes effect at interval 3, and the
driver (a process of its own, tests/rescale_case.py) is killed with SIGKILL after interval 5.
Restarted with ``getOrCreate`` to interval 8 (in this session's context), the state keeps the
8 partitions the journal recorded, whether the saved program is restored or the unchanged
code rebuilds it (``rebuildGraph=True``); code that now asks for another count rescales at
the restart's first interval. Every interval's totals equal a run without the kill."""

from __future__ import annotations

import shutil
import signal
from pathlib import Path
from typing import Any

import pytest

from dstream import ManualClock, StreamingContext
from testbed.drivers import run_module
from tests.integration.test_recovery import T0, B, expected_outputs, outputs
from tests.rescale_case import INTERVALS, advance, partition_counts, program, write_inputs

pytestmark = pytest.mark.slow
KILL_AFTER = 5


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The directory of a driver killed -9 after interval 5 (in, out, ckpt), and a copy of
    it as the kill left it, which each restart below starts from."""
    root = tmp_path_factory.mktemp("rescale-killed")
    for name in ("in", "out", "ckpt"):
        (root / name).mkdir()
    write_inputs(root / "in")
    args = [str(root / d) for d in ("in", "out", "ckpt")]
    args += ["--rescale-before", "3", "--kill-after", str(KILL_AFTER)]
    done = run_module("tests.rescale_case", args)
    assert done.returncode == -signal.SIGKILL, done.stderr[-3000:]
    assert partition_counts(root / "out") == [4, 4, 8, 8, 8]
    copy = tmp_path_factory.mktemp("rescale-at-kill")
    shutil.copytree(root, copy, dirs_exist_ok=True)
    return root, copy


def resume(sc: Any, killed: tuple[Path, Path], tmp_path: Path, rebuild: int | None) -> Path:
    """Restart a copy of the killed program's directories to interval 8: the saved program
    (``rebuild`` None), or the code's with ``rebuild`` partitions under rebuildGraph. Returns
    the directory whose out/ the restarted program wrote: the saved program's outputs still
    name the killed driver's out/, the copy of ckpt is this restart's."""
    for name in ("out", "ckpt"):  # (a file source's directory is part of its state)
        shutil.copytree(killed[1] / name, tmp_path / name)
    clock = ManualClock(T0 + KILL_AFTER * B)
    ssc = StreamingContext.getOrCreate(
        str(tmp_path / "ckpt"),
        lambda: program(
            sc, clock, killed[0] / "in", tmp_path / "out", tmp_path / "ckpt", rebuild or 4
        )[0],
        sc,
        clock=clock,
        rebuildGraph=rebuild is not None,
    )
    try:
        ssc.start()
        advance(ssc, clock, INTERVALS)
    finally:
        ssc.stop(stopSparkContext=False)
    return killed[0] if rebuild is None else tmp_path


def totals_as_without_the_kill(out: Path) -> None:
    want = {k: v for k, v in expected_outputs(INTERVALS).items() if k.startswith("totals-")}
    assert {k: v for k, v in outputs(out).items() if k.startswith("totals-")} == want


def test_the_saved_program_keeps_its_run_time_rescale(
    sc: Any, killed: tuple[Path, Path], tmp_path: Path
) -> None:
    out = resume(sc, killed, tmp_path, rebuild=None) / "out"
    assert partition_counts(out) == [4, 4, 8, 8, 8, 8, 8, 8]
    totals_as_without_the_kill(out)


def test_unchanged_code_rebuilt_keeps_the_rescale_and_a_changed_count_rescales(
    sc: Any, killed: tuple[Path, Path], tmp_path: Path
) -> None:
    same = resume(sc, killed, tmp_path / "same", rebuild=4) / "out"
    assert partition_counts(same) == [4, 4, 8, 8, 8, 8, 8, 8]
    totals_as_without_the_kill(same)
    changed = resume(sc, killed, tmp_path / "changed", rebuild=6) / "out"
    assert partition_counts(changed) == [4, 4, 8, 8, 8, 6, 6, 6]
    totals_as_without_the_kill(changed)
