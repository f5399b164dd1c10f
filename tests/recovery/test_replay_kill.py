"""kill -9 the driver of a replay in the middle of a stretch (dstream.scheduler.stretch),
replay again into the same directory, and compare with a replay of one interval at a time
without faults: every interval committed once, with the same lines; what the killed driver
committed is not written again, and nothing staged is left."""

from __future__ import annotations

import random
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from dstream import StreamingContext, Time
from testbed.drivers import run_module
from tests.replay_case import T0, B, interval_dirs, staging_left, stateless, write_inputs

pytestmark = pytest.mark.slow


def driver(
    indir: Path, out: Path, end_ms: int, kill_after: int
) -> subprocess.CompletedProcess[str]:
    args = [str(indir), str(out), str(T0), str(end_ms), "--kill-after", str(kill_after)]
    return run_module("tests.replay_case", args)


def test_a_replay_killed_mid_stretch_and_run_again_commits_each_interval_once(
    sc: Any, tmp_path: Path
) -> None:
    indir, out, reference = tmp_path / "in", tmp_path / "out", tmp_path / "reference"
    for d in (indir, out, reference):
        d.mkdir()
    intervals = 16
    write_inputs(indir, intervals, random.Random(23), gzip_at=-1)
    end_ms = T0 + intervals * B

    killed = driver(indir, out, end_ms, kill_after=3)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    before = {
        d.name: (d / "_DSTREAM_COMMIT").stat().st_mtime_ns
        for d in out.iterdir()
        if (d / "_DSTREAM_COMMIT").exists()
    }
    # Killed after its third interval: one stretch of all 16 was computed and staged, and
    # only the first intervals were committed.
    assert 3 * 3 <= len(before) < 3 * intervals, sorted(before)
    assert staging_left(out) != []

    # Run again as docs/replay.md says: the same output, a checkpoint directory of its own
    # (a driver of its own too: this session's, which never saw the killed one's state).
    again = StreamingContext.replay(
        lambda: stateless(sc, indir, out, 32, checkpoint="ckpt-again"), Time(T0), Time(end_ms)
    )
    assert again.stretched == intervals

    StreamingContext.replay(lambda: stateless(sc, indir, reference, 1), Time(T0), Time(end_ms))
    assert interval_dirs(out) == interval_dirs(reference)
    assert len(interval_dirs(out)) == 3 * intervals
    # What the killed driver committed stays as it was; nothing staged is left.
    for name, mtime in before.items():
        assert (out / name / "_DSTREAM_COMMIT").stat().st_mtime_ns == mtime, name
    assert staging_left(out) == []
