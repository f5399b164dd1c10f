"""Real driver processes for fault tests and benchmarks: ``apps/recoverable.py`` run in a
process group of its own (driver, its JVM, its Python workers, and under ``local-cluster``
its executor JVMs), so that one ``kill -9`` takes all of it down as a crashed machine would,
and where its input, output and checkpoints live (local disk, or HDFS in tests/hdfs)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
from collections import deque
from pathlib import Path
from typing import Any, Protocol

APP = Path(__file__).resolve().parents[1] / "apps" / "recoverable.py"

__all__ = [
    "APP",
    "KILL_POINTS",
    "App",
    "DriverProcess",
    "LocalStorage",
    "Storage",
    "run_module",
    "wait_for",
    "wait_for_kill_point",
]

# When a driver kill may come: a random moment, while a state checkpoint is being written,
# while an interval's output is being committed.
KILL_POINTS = ("random", "checkpoint", "commit")


class Storage(Protocol):
    """Where the application's input, output and checkpoints live, seen from the test."""

    poll_s: float  # how often a kill point is polled for

    def uri(self, name: str) -> str: ...

    def make_dirs(self) -> None: ...

    def put_input(self, name: str, text: str) -> None:
        """Write ``name`` into the input directory atomically (hidden name, then rename)."""
        ...

    def names(self, name: str) -> list[str]:
        """Entries of a directory (empty if missing)."""
        ...

    def read_text(self, path: str) -> str: ...


class LocalStorage:
    poll_s = 0.002

    def __init__(self, root: Path) -> None:
        self.root = root

    def uri(self, name: str) -> str:
        return str(self.root / name)

    def make_dirs(self) -> None:
        for name in ("in", "out", "ckpt"):
            (self.root / name).mkdir(parents=True)

    def put_input(self, name: str, text: str) -> None:
        hidden = self.root / "in" / f".{name}"
        hidden.write_text(text)
        hidden.rename(self.root / "in" / name)

    def names(self, name: str) -> list[str]:
        try:
            return os.listdir(self.root / name)
        except FileNotFoundError:
            return []

    def read_text(self, path: str) -> str:
        return (self.root / path).read_text()


class DriverProcess:
    """A driver program (``argv`` after the Python interpreter) that prints a JSON line with
    ``"started"`` (and ``"restored"``) once running, in a process group of its own."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.argv = argv
        self.env = env or {}  # added to this process's environment
        self.proc: subprocess.Popen[str] | None = None
        self.started = threading.Event()
        self.restored: list[bool] = []
        self.app_id: str | None = None  # Spark's application id of the running driver
        self.driver_port: int | None = None  # its spark.driver.port (executors name it)
        self.batches: list[dict[str, Any]] = []  # the running driver's completed intervals
        self._stderr: list[str] = []
        self._stderr_tail: deque[str] = deque(maxlen=400)  # everything, for a failure's report
        self._stderr_done = threading.Event()

    def start(self) -> None:
        self.started.clear()
        self.batches = []
        self.proc = subprocess.Popen(
            [sys.executable, *self.argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # its own process group: the JVM and workers die with it
            env={**os.environ, "PYSPARK_PYTHON": sys.executable, **self.env},
        )
        threading.Thread(target=self._read, args=(self.proc,), daemon=True).start()
        self._stderr, self._stderr_done = [], threading.Event()
        self._stderr_tail = deque(maxlen=400)
        threading.Thread(target=self._read_stderr, args=(self.proc,), daemon=True).start()
        assert self.started.wait(180), "the application did not start"

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("{"):
                event = json.loads(line)
                if event.get("started"):
                    self.restored.append(event["restored"])
                    self.app_id = event.get("app_id")
                    port = event.get("driver_port")
                    self.driver_port = None if port is None else int(port)
                    self.started.set()
                elif "batch_ms" in event:
                    self.batches.append(event)

    def _read_stderr(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self._stderr_tail.append(line)
            if "dstream" in line:  # the driver's own lines, not the JVM's log
                self._stderr.append(line)
        self._stderr_done.set()

    @property
    def stderr_text(self) -> str | None:
        """What the (exited) driver printed about itself on stderr."""
        return "".join(self._stderr) if self._stderr_done.wait(30) else None

    def report(self) -> str:
        """Whether the driver still runs, and the end of what it printed on stderr: for the
        message of a test that waited on it in vain."""
        if self.proc is None:
            return "the driver was never started"
        code = self.proc.poll()
        state = "is still running" if code is None else f"exited with code {code}"
        last = self.batches[-1] if self.batches else None
        done = f"{len(self.batches)} intervals completed since its start, the last {last}"
        tail = "".join(list(self._stderr_tail))
        return f"the driver (pid {self.proc.pid}) {state}; {done}; the end of its stderr:\n{tail}"

    def kill9(self) -> None:
        """kill -9 of the whole process group (no-op if it is not running)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        """A graceful stop: SIGTERM to the driver alone (its JVM must outlive it)."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(120) == 0


class App(DriverProcess):
    """``apps/recoverable.py`` reading, writing and checkpointing on ``storage``."""

    def __init__(self, storage: Storage, extra_args: list[str]) -> None:
        s = storage
        super().__init__(
            [
                str(APP),
                *("--input", s.uri("in"), "--output", s.uri("out"), "--checkpoint", s.uri("ckpt")),
                *("--batch", "1s", "--checkpoint-every", "2s", "--quiet"),
                *extra_args,
            ]
        )
        self.storage = storage
        self.extra_args = extra_args


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


def checkpoint_in_progress(storage: Storage) -> bool:
    """A state checkpoint of ``apps/recoverable.py`` is being written (not yet complete)."""
    for stream in storage.names("ckpt"):
        if stream.startswith("state-"):
            for d in storage.names(f"ckpt/{stream}"):
                if d.isdigit() and "_COMPLETE" not in storage.names(f"ckpt/{stream}/{d}"):
                    return True
    return False


def commit_in_progress(storage: Storage) -> bool:
    """An interval's ``lines`` output is being committed (its temporary directory exists)."""
    return any(n.startswith(".lines-") and ".tmp-" in n for n in storage.names("out"))


def wait_for_kill_point(storage: Storage, kind: str, rng: random.Random) -> None:
    """Return when a kill of ``kind`` (one of :data:`KILL_POINTS`) is due: after 1-4 s drawn
    from ``rng``, or as soon as a checkpoint or a commit is seen in progress."""
    if kind == "random":
        threading.Event().wait(rng.uniform(1.0, 4.0))
    elif kind == "checkpoint":
        wait_for(lambda: checkpoint_in_progress(storage), 120, "a checkpoint", storage.poll_s)
    elif kind == "commit":
        wait_for(lambda: commit_in_progress(storage), 120, "a commit", storage.poll_s)
    else:
        raise ValueError(f"kill point {kind!r} is not one of {KILL_POINTS}")


def run_module(
    module: str, args: list[str], timeout_s: float = 300
) -> subprocess.CompletedProcess[str]:
    """``python -m module args`` from the repository's root, as a driver of its own (its own
    JVM), with its output captured: for a test's program that kills itself with SIGKILL."""
    root = APP.parents[1]
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env={
            **os.environ,
            "PYSPARK_PYTHON": sys.executable,
            "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
        },
        check=False,
    )
