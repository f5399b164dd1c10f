"""kill -9 the driver of a receiver application (apps/receiver_recoverable.py) while a
client keeps sending, and restart it with the same command each time: the client keeps
every block until the interval holding it has completed and sends what it keeps to the
restarted driver, which drops the blocks it already committed, so every record the client
sent is output by exactly one interval."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest

from dstream.receiver.client import ReceiverClient
from testbed.drivers import wait_for

pytestmark = pytest.mark.slow

APP = Path(__file__).resolve().parents[2] / "apps" / "receiver_recoverable.py"
SECRET = "driver-kill-test-secret-0123456789"


class App:
    """The application in a process group of its own (one kill -9 takes its JVM and
    workers down too), started again with the same command after each kill."""

    def __init__(self, args: list[str], logs: Path) -> None:
        self.args, self.logs = args, logs
        self.proc: subprocess.Popen[str] | None = None
        self.started = threading.Event()
        self.restored: list[bool] = []

    def start(self) -> None:
        self.started.clear()
        log = self.logs / f"driver-{len(self.restored)}.log"
        self.proc = subprocess.Popen(
            [sys.executable, str(APP), *self.args],
            stdout=subprocess.PIPE,
            stderr=log.open("w"),
            text=True,
            start_new_session=True,
            env={**os.environ, "PYSPARK_PYTHON": sys.executable, "DSTREAM_RECEIVER_SECRET": SECRET},
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
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(120) == 0


def committed(out: Path) -> dict[int, list[str]]:
    """Interval -> its records, for every committed output directory ``values-<ms>``."""
    found = {}
    for d in out.glob("values-*"):
        if (d / "_DSTREAM_COMMIT").exists() or (d / "_SUCCESS").exists():
            found[int(d.name.rsplit("-", 1)[1])] = [
                line for part in sorted(d.glob("part-*")) for line in part.read_text().splitlines()
            ]
    return found


class Sending(threading.Thread):
    """Numbered records, one every 4 ms in blocks of 25, until stopped; then everything is
    flushed. ``sent`` is the client's own log."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.client = ReceiverClient([("127.0.0.1", port)], SECRET, block_records=25)
        self.sent: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        i = 0
        while not self.stop.wait(0.004):
            self.client.send(f"v{i}")
            self.sent.append(f"v{i}")
            i += 1
        self.client.flush()


def test_killing_the_driver_while_a_client_sends_loses_and_doubles_nothing(
    tmp_path: Path,
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    app = App(
        [
            *("--port", str(port), "--output", str(out), "--checkpoint", str(ckpt)),
            *("--batch", "500ms", "--quiet"),
        ],
        tmp_path,
    )
    sending = Sending(port)
    try:
        app.start()
        sending.start()
        rng = random.Random(19)
        for _ in range(2):
            threading.Event().wait(rng.uniform(2.0, 4.0))  # real time: the app runs on it
            app.kill9()
            app.start()
        threading.Event().wait(1.0)
        sending.stop.set()
        sending.join(30)
        assert sending.client.wait_committed(180), f"{sending.client.kept_blocks} not committed"

        def everything_out() -> bool:
            return sum(len(v) for v in committed(out).values()) >= len(sending.sent)

        wait_for(everything_out, 120, "every record to be output", 0.2)
        app.stop()
    finally:
        sending.stop.set()
        sending.client.close()
        app.kill9()
    assert app.restored == [False, True, True]
    assert sending.client.connections >= 3  # it reconnected to each restarted driver
    values = committed(out)
    assert Counter(v for lines in values.values() for v in lines) == Counter(sending.sent)
