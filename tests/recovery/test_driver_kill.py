"""kill -9 the driver of a real streaming application, restart it, and check that every input
line was output exactly once and the state is what a run without failures computes.

apps/recoverable.py runs in its own process group (driver, its JVM and Python workers). A
generator writes input files into the watched directory while the application runs. The
driver is killed with SIGKILL five times: at random moments, while a state checkpoint is
being written, and while an interval's output is being committed; each time it is restarted
with the same command, and StreamingContext.getOrCreate resumes it from its journal.
Afterwards the union of all committed outputs must equal that of a run without failures:
every input line in exactly one interval, and the final running word counts exact.
"""

from __future__ import annotations

import glob
import json
import os
import random
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

APP = Path(__file__).resolve().parents[2] / "apps" / "recoverable.py"
FILES, LINES_PER_FILE = 60, 4
WORDS = ("to be or not that is the question whether tis nobler in mind").split()

pytestmark = pytest.mark.slow


def input_lines() -> list[list[str]]:
    rng = random.Random(7)
    return [
        [f"L{f:03d}-{n} " + " ".join(rng.choices(WORDS, k=5)) for n in range(LINES_PER_FILE)]
        for f in range(FILES)
    ]


class App:
    def __init__(self, dirs: dict[str, Path]) -> None:
        self.dirs = dirs
        self.proc: subprocess.Popen[str] | None = None
        self.started = threading.Event()
        self.restored: list[bool] = []

    def start(self) -> None:
        self.started.clear()
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(APP),
                "--input",
                str(self.dirs["in"]),
                "--output",
                str(self.dirs["out"]),
                "--checkpoint",
                str(self.dirs["ckpt"]),
                "--batch",
                "1s",
                "--checkpoint-every",
                "2s",
                "--quiet",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,  # its own process group: the JVM and workers die with it
            env={**os.environ, "PYSPARK_PYTHON": sys.executable},
        )
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()
        assert self.started.wait(180), "the application did not start"

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("{"):
                event = json.loads(line)
                if event.get("started"):
                    self.restored.append(event["restored"])
                    self.started.set()

    def kill9(self) -> None:
        assert self.proc is not None
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        """A graceful stop: SIGTERM to the driver alone (its JVM must outlive it)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(120) == 0


def write_inputs(directory: Path, lines: list[list[str]], done: threading.Event) -> None:
    pace = threading.Event()
    for f, file_lines in enumerate(lines):
        hidden = directory / f".f{f:03d}"
        hidden.write_text("\n".join(file_lines) + "\n")
        hidden.rename(directory / f"f{f:03d}.txt")
        pace.wait(0.2)  # the input's own rate: one file every 200 ms
    done.set()


def wait_for(condition: Any, timeout_s: float, what: str, step_s: float = 0.002) -> None:
    """Poll an external process's files until ``condition()`` (a kill point or completion)."""
    deadline = threading.Event()
    timer = threading.Timer(timeout_s, deadline.set)
    timer.start()
    try:
        while not condition():
            if deadline.wait(step_s):
                raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
    finally:
        timer.cancel()


def committed_lines(out: Path) -> Counter[str]:
    lines: Counter[str] = Counter()
    for d in glob.glob(str(out / "lines-*")):
        assert os.path.exists(os.path.join(d, "_DSTREAM_COMMIT")), d
        for part in glob.glob(os.path.join(d, "part-*")):
            lines.update(Path(part).read_text().splitlines())
    return lines


def final_totals(out: Path) -> dict[str, int]:
    last = max(glob.glob(str(out / "totals-*")), key=lambda d: int(d.rsplit("-", 1)[1]))
    totals = {}
    for part in glob.glob(os.path.join(last, "part-*")):
        for line in Path(part).read_text().splitlines():
            word, count = eval(line)  # the files hold repr((word, count))
            totals[word] = count
    return totals


def checkpoint_in_progress(ckpt: Path) -> bool:
    for d in glob.glob(str(ckpt / "state-*" / "*")):
        if os.path.basename(d).isdigit() and not os.path.exists(os.path.join(d, "_COMPLETE")):
            return True
    return False


def commit_in_progress(out: Path) -> bool:
    return bool(glob.glob(str(out / ".lines-*.tmp-*")))


def run(tmp_path: Path, kills: list[str]) -> tuple[Counter[str], dict[str, int], list[bool]]:
    dirs = {name: tmp_path / name for name in ("in", "out", "ckpt")}
    for d in dirs.values():
        d.mkdir(parents=True)
    lines = input_lines()
    app = App(dirs)
    try:
        app.start()
        done = threading.Event()
        writer = threading.Thread(target=write_inputs, args=(dirs["in"], lines, done))
        writer.start()
        rng = random.Random(11)
        for kind in kills:
            if kind == "random":
                threading.Event().wait(rng.uniform(1.0, 4.0))
            elif kind == "checkpoint":
                wait_for(lambda: checkpoint_in_progress(dirs["ckpt"]), 120, "a checkpoint write")
            elif kind == "commit":
                wait_for(lambda: commit_in_progress(dirs["out"]), 120, "an output commit")
            app.kill9()
            app.start()
        writer.join()
        expected = Counter(line for file_lines in lines for line in file_lines)
        wait_for(lambda: set(committed_lines(dirs["out"])) == set(expected), 300, "all input", 0.2)
        app.stop()
    finally:
        app.kill9()  # never leave a driver behind, whatever failed
    return committed_lines(dirs["out"]), final_totals(dirs["out"]), app.restored


def test_killing_the_driver_loses_and_doubles_nothing(tmp_path: Path) -> None:
    lines = input_lines()
    expected_lines = Counter(line for file_lines in lines for line in file_lines)
    expected_totals = Counter(
        w for file_lines in lines for line in file_lines for w in line.split()[1:]
    )

    reference_lines, reference_totals, restored = run(tmp_path / "reference", [])
    assert restored == [False]
    assert reference_lines == expected_lines
    assert reference_totals == expected_totals

    kills = ["random", "checkpoint", "random", "commit", "random"]
    got_lines, got_totals, restored = run(tmp_path / "faulty", kills)
    assert restored == [False, True, True, True, True, True]
    # Nothing missing, nothing doubled, state exact: the same as the run without failures.
    assert got_lines == reference_lines
    assert got_totals == reference_totals
