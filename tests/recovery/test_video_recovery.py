"""The video monitor survives kill -9 of an executor and of its driver: every interval's
committed metrics (every metric of every group) still equal the oracle's.

apps/video_monitor.py runs on ``local-cluster[2,1,1024]`` (executor JVMs of their own) in its
own process group, reading the files this test writes, one per interval, each when its time
comes (the generator's LiveWriter, modification time = the slice's start). Mid-run an
executor JVM is killed with SIGKILL (Spark recomputes what it held from lineage); later the
whole driver process group is, and the same command is started again: getOrCreate resumes
from the checkpoint directory, recomputes the state since the last checkpoints from the
files on record and runs the intervals missed while it was down.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from video.config import MonitorConfig
from video.generator import EventGenerator, LiveWriter
from video.oracle import Oracle

from testbed.processes import process_tree
from tests.video_case import APPS, generator_config

# make test-full: a second proof, on an app, of what tests/recovery/test_chaos.py proves in
# make test (executor and driver kills, every interval equal to an oracle).
pytestmark = [pytest.mark.slow, pytest.mark.cluster, pytest.mark.full]

SLICES = 18
CONFIG = MonitorConfig(
    window_ms=4000, baseline_ms=12000, timeout_ms=5000, stall_ms=3000, hll_precision=8
)


class Monitor:
    """The monitor's process: started, killed and restarted with the same command."""

    def __init__(self, root: Path) -> None:
        self.command = [
            sys.executable,
            str(APPS / "video_monitor.py"),
            *("--source", "files", "--dir", str(root / "in"), "--out", str(root / "out")),
            *("--checkpoint", str(root / "ckpt"), "--master", "local-cluster[2,1,1024]"),
            *("--window", "4s", "--baseline", "12s", "--timeout", "5s", "--stall", "3s"),
            *("--hll-precision", "8", "--seconds", "3600", "--json", "--quiet"),
            *("--conf", "spark.ui.enabled=false"),
        ]
        self.proc: subprocess.Popen[str] | None = None
        self.started: list[dict[str, Any]] = []
        self.completed: set[int] = set()
        self.changed = threading.Condition()

    def start(self) -> dict[str, Any]:
        before = len(self.started)
        self.proc = subprocess.Popen(
            self.command,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,  # its own process group: its JVMs die with it
            env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        )
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()
        self.wait(lambda: len(self.started) > before, 300, "the monitor to start")
        return self.started[-1]

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("{"):
                event = json.loads(line)
                with self.changed:
                    if event.get("started"):
                        self.started.append(event)
                    elif "batch_ms" in event:
                        self.completed.add(event["batch_ms"])
                    self.changed.notify_all()

    def wait(self, condition: Any, timeout_s: float, what: str) -> None:
        with self.changed:
            assert self.changed.wait_for(condition, timeout_s), f"timed out waiting for {what}"

    def kill_an_executor(self) -> int:
        assert self.proc is not None
        for pid in process_tree(self.proc.pid):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"CoarseGrainedExecutorBackend" in cmdline:
                os.kill(pid, signal.SIGKILL)
                return pid
        raise AssertionError("no executor JVM found under the monitor's process")

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def committed(out: Path, batch_ms: int) -> dict[tuple[str, str], dict[str, Any]] | None:
    directory = out / f"metrics-{batch_ms}"
    if not (directory / "_DSTREAM_COMMIT").exists():
        return None
    records = {}
    for part in sorted(os.listdir(directory)):
        if part.startswith("part-"):
            for line in (directory / part).read_text().splitlines():
                r = json.loads(line)
                records[(r["dim"], r["value"])] = r
    return records


def test_killing_an_executor_and_the_driver_changes_no_metric(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    monitor = Monitor(tmp_path)
    try:
        first = monitor.start()
        assert first["restored"] is False
        origin = first["origin_ms"] + 3000  # slice 0: a few intervals after the start
        cfg = generator_config(origin_ms=origin)
        writer = LiveWriter(str(tmp_path / "in"), cfg, slices=SLICES)
        writer.start()

        def batch(k: int) -> int:
            """The batch time of the interval that reads slice k."""
            return origin + (k + 1) * cfg.slice_ms

        monitor.wait(lambda: batch(4) in monitor.completed, 300, "interval 4")
        monitor.kill_an_executor()
        monitor.wait(lambda: batch(10) in monitor.completed, 300, "interval 10")
        monitor.kill9()
        again = monitor.start()
        assert again["restored"] is True
        writer.join(300)
        assert writer.written == SLICES
        monitor.wait(lambda: batch(SLICES - 1) in monitor.completed, 600, "the last interval")
    finally:
        # Every interval compared below is committed; whatever runs after them (a busy
        # machine leaves the monitor behind real time) need not finish.
        monitor.kill9()

    oracle = Oracle(CONFIG)
    for k, events in enumerate(EventGenerator(cfg).slices(SLICES)):
        expected = oracle.step(batch(k), events)
        assert committed(tmp_path / "out", batch(k)) == expected, f"slice {k}"
    assert sum(oracle.timed_out) > 0
