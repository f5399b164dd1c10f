"""kill -9 the driver at a random moment of its first interval, restart it with the same
command, and check that every record that arrived since the first start is output exactly
once: files, Kafka from "latest", and the replicated receiver. Before start() recorded the
program, a driver killed there came back as a new program and skipped what had arrived in
between (issue 31).

One trial: start the app and wait until it says it started; input arrives at once; kill -9
the whole process group after a random fraction of the first interval; restart; wait for
every record. ``DSTREAM_EARLY_KILL_TRIALS`` trials per source (``make test``: one trial,
files only; ``make test-full``: 20 per source).
"""

from __future__ import annotations

import os
import random
import socket
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from testbed.drivers import DriverProcess, wait_for

pytestmark = pytest.mark.slow

APPS = Path(__file__).resolve().parents[2] / "apps"
TRIALS = int(os.environ.get("DSTREAM_EARLY_KILL_TRIALS", "1"))
BATCH_S = 1.0
SECRET = "early-kill-test-secret-0123456789"


def committed(out: Path, prefix: str) -> Counter[str]:
    """Every line of the committed ``prefix-<ms>`` output directories."""
    lines: Counter[str] = Counter()
    for d in out.glob(f"{prefix}-*"):
        if (d / "_DSTREAM_COMMIT").exists():
            for part in d.glob("part-*"):
                lines.update(part.read_text().splitlines())
    return lines


class Source:
    """What one kind of input needs for a trial: the app's arguments, and a way to send
    records once the app runs (returns what a restart must output)."""

    prefix = "values"

    def argv(self, tmp: Path) -> list[str]:
        out, ckpt = tmp / "out", tmp / "ckpt"
        common = ["--output", str(out), "--checkpoint", str(ckpt), "--batch", f"{BATCH_S}s"]
        return [*self.app(tmp), *common, "--quiet"]

    def app(self, tmp: Path) -> list[str]:
        """The app and its own arguments."""
        raise NotImplementedError

    def send(self, trial: int) -> list[str]:
        raise NotImplementedError

    def close(self) -> None:
        """Release what the trial used."""


class Files(Source):
    prefix = "lines"

    def app(self, tmp: Path) -> list[str]:
        self.input = tmp / "in"
        self.input.mkdir()
        return [str(APPS / "recoverable.py"), "--input", str(self.input)]

    def send(self, trial: int) -> list[str]:
        lines = [f"T{trial}-{i} early words" for i in range(6)]
        for i, line in enumerate(lines):
            hidden = self.input / f".f{i}"
            hidden.write_text(line + "\n")
            hidden.rename(self.input / f"f{i}.txt")
        return lines


class Kafka(Source):
    def __init__(self, broker: Any, topic: str) -> None:
        from confluent_kafka import Producer

        self.broker, self.topic = broker, topic
        self.producer = Producer(broker.producer_config())

    def app(self, tmp: Path) -> list[str]:
        app = [str(APPS / "kafka_recoverable.py"), "--bootstrap", self.broker.bootstrap]
        return [*app, "--topic", self.topic, "--start", "latest", "--group", f"g-{tmp.name}"]

    def send(self, trial: int) -> list[str]:
        values = [f"T{trial}-{i}" for i in range(30)]
        for v in values:
            self.producer.produce(self.topic, v.encode(), f"k{len(v) % 3}".encode())
        assert self.producer.flush(30) == 0
        return values


class Receiver(Source):
    def app(self, tmp: Path) -> list[str]:
        with socket.create_server(("127.0.0.1", 0)) as probe:
            self.port = probe.getsockname()[1]
        self.client: Any = None
        return [str(APPS / "receiver_recoverable.py"), "--port", str(self.port)]

    def send(self, trial: int) -> list[str]:
        from dstream.receiver.client import ReceiverClient

        self.client = ReceiverClient([("127.0.0.1", self.port)], SECRET, block_records=5)
        values = [f"T{trial}-{i}" for i in range(20)]
        for v in values:
            self.client.send(v)
        self.client.flush()
        return values

    def close(self) -> None:
        if self.client is not None:
            assert self.client.wait_committed(120), f"{self.client.kept_blocks} not committed"
            self.client.close()


# make test kills the files program; the Kafka and receiver programs in make test-full
# (35 s of make test's critical path). Their sources' own part of a restart before the first
# record is in make test's fast tests: Kafka's "latest" resolved once and recorded at
# start() (tests/kafka/test_recovery.py, a crash before the first interval) and the
# receiver's uncommitted blocks handed to the restarted driver
# (tests/integration/test_receiver_recovery.py); what this test adds is the kill at a random
# moment of the first interval, which is the same code for every source (start() records
# the program before the first interval is generated).
@pytest.fixture(
    params=[
        "files",
        pytest.param("kafka", marks=pytest.mark.full),
        pytest.param("receiver", marks=pytest.mark.full),
    ]
)
def source(request: pytest.FixtureRequest) -> Iterator[Callable[[], Source]]:
    if request.param == "files":
        yield Files
    elif request.param == "kafka":
        broker = request.getfixturevalue("kafka_broker")
        topic = request.getfixturevalue("new_topic")(2)
        yield lambda: Kafka(broker, topic)
    else:
        yield Receiver


def test_a_driver_killed_in_its_first_interval_loses_nothing(
    source: Callable[[], Source], tmp_path: Path
) -> None:
    rng = random.Random(31)
    for trial in range(TRIALS):
        tmp = tmp_path / f"trial{trial}"
        tmp.mkdir()
        src = source()
        app = DriverProcess(src.argv(tmp), env={"DSTREAM_RECEIVER_SECRET": SECRET})
        try:
            app.start()
            sent = src.send(trial)
            delay = rng.uniform(0.0, BATCH_S)
            threading.Event().wait(delay)  # real time: the app runs on it
            app.kill9()
            app.start()
            out = tmp / "out"
            try:
                wait_for(lambda: set(committed(out, src.prefix)) >= set(sent), 120, "all", 0.2)
            except AssertionError:
                missing = sorted(set(sent) - set(committed(out, src.prefix)))
                raise AssertionError(
                    f"trial {trial}, killed {delay:.2f} s after start: {len(missing)} of "
                    f"{len(sent)} records never output ({missing[:5]}...); {app.report()}"
                ) from None
            src.close()  # then the finally's kill: every record is out, nothing to drain
        finally:
            app.kill9()
        assert app.restored == [False, True], f"trial {trial}: {app.restored}"
        got = committed(tmp / "out", src.prefix)
        assert got == Counter(sent), f"trial {trial}, killed {delay:.2f} s after start"
