"""kill -9 the driver of a receiver application (apps/receiver_recoverable.py) while a
client keeps sending, and restart it with the same command each time: the client keeps
every block until the interval holding it has completed and sends what it keeps to the
restarted driver, which drops the blocks it already committed, so every record the client
sent is output by exactly one interval."""

from __future__ import annotations

import random
import socket
import threading
from collections import Counter
from pathlib import Path

import pytest

from dstream.receiver.client import ReceiverClient
from testbed.drivers import DriverProcess, wait_for

pytestmark = pytest.mark.slow

APP = Path(__file__).resolve().parents[2] / "apps" / "receiver_recoverable.py"
SECRET = "driver-kill-test-secret-0123456789"


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


@pytest.mark.parametrize(
    ("placement", "master"),
    [
        ("driver", "local[2]"),
        pytest.param("executors", "local[2]", marks=pytest.mark.full),
        # The receiver in an executor JVM of its own (killed with the driver's process
        # group); the restarted driver's receiver starts in a new executor, on the same port.
        pytest.param("executors", "local-cluster[2,1,1024]", marks=pytest.mark.full),
    ],
)
def test_killing_the_driver_while_a_client_sends_loses_and_doubles_nothing(
    tmp_path: Path, placement: str, master: str
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    app = DriverProcess(
        [
            str(APP),
            *("--port", str(port), "--output", str(out), "--checkpoint", str(ckpt)),
            *("--batch", "500ms", "--quiet", "--placement", placement, "--master", master),
        ],
        env={"DSTREAM_RECEIVER_SECRET": SECRET},
    )
    sending = Sending(port)
    try:
        app.start()
        sending.start()
        rng = random.Random(19)
        for k in range(2):
            # Once the client sends to this driver's receiver (a receiver on an executor
            # listens only once the cluster is up), a while later (real time: the app runs
            # on it).
            wait_for(
                lambda k=k: sending.client.connections > k,
                120,
                f"the client to connect to driver {k + 1}",
                0.1,
            )
            threading.Event().wait(rng.uniform(1.5, 3.0))
            app.kill9()
            app.start()
        threading.Event().wait(1.0)
        sending.stop.set()
        sending.join(30)
        assert sending.client.wait_committed(180), f"{sending.client.kept_blocks} not committed"

        def everything_out() -> bool:
            return sum(len(v) for v in committed(out).values()) >= len(sending.sent)

        wait_for(everything_out, 120, "every record to be output", 0.2)
        # Then the finally's kill, not a graceful stop: that would first run every interval
        # generated ahead of a driver still catching up, after all input.
    finally:
        sending.stop.set()
        sending.client.close()
        app.kill9()
    assert app.restored == [False, True, True]
    assert sending.client.connections >= 3  # it reconnected to each restarted driver
    values = committed(out)
    assert Counter(v for lines in values.values() for v in lines) == Counter(sending.sent)
