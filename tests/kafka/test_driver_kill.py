"""kill -9 the driver of a Kafka application (apps/kafka_recoverable.py) while a producer
keeps writing, restart it with the same command each time: every record is output by
exactly one interval, and the running counts per key are exact."""

from __future__ import annotations

import random
import threading
from collections import Counter
from pathlib import Path

import pytest

from testbed.drivers import DriverProcess
from testbed.kafka import KafkaBroker
from tests.kafka.test_broker_restart import Producing
from tests.recovery.harness import wait_for

pytestmark = pytest.mark.slow

APP = Path(__file__).resolve().parents[2] / "apps" / "kafka_recoverable.py"


def committed(out: Path, prefix: str) -> dict[int, list[str]]:
    """Interval -> its lines, for every committed output directory ``prefix-<ms>``."""
    found = {}
    for d in out.glob(f"{prefix}-*"):
        assert (d / "_DSTREAM_COMMIT").exists() or (d / "_SUCCESS").exists(), d
        lines: list[str] = []
        for part in sorted(d.glob("part-*")):
            lines.extend(part.read_text().splitlines())
        found[int(d.name.rsplit("-", 1)[1])] = lines
    return found


def test_killing_the_driver_while_producers_write_loses_and_doubles_nothing(
    kafka_broker: KafkaBroker, new_topic: object, tmp_path: Path
) -> None:
    assert callable(new_topic)
    topic = new_topic(3)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    app = DriverProcess(
        [
            str(APP),
            *("--bootstrap", kafka_broker.bootstrap, "--topic", topic),
            *("--output", str(out), "--checkpoint", str(ckpt)),
            *("--batch", "1s", "--checkpoint-every", "2s", "--quiet"),
        ]
    )
    producing = Producing(kafka_broker, topic)
    try:
        app.start()
        producing.start()
        rng = random.Random(19)
        for _ in range(2):  # a restarted driver killed again: its journal resumes the third
            threading.Event().wait(rng.uniform(2.0, 5.0))  # real time: the app runs on it
            app.kill9()
            app.start()
        sent = producing.finish()

        def everything_out() -> bool:
            return sum(len(v) for v in committed(out, "values").values()) >= len(sent)

        wait_for(everything_out, 180, "every record to be output", 0.2)
        # The totals of the interval that output the last record (a commit renames an
        # output into place, so every name is complete), then the finally's kill instead of
        # a graceful stop, which would first run every interval generated ahead.
        last = max(t for t, lines in committed(out, "values").items() if lines)

        def last_totals_out() -> bool:
            return any(int(d.name.rsplit("-", 1)[1]) >= last for d in out.glob("totals-*"))

        wait_for(last_totals_out, 120, "the last record's totals", 0.2)
    finally:
        producing.stop.set()
        app.kill9()
    assert app.restored == [False, True, True]
    values = committed(out, "values")
    assert Counter(v for lines in values.values() for v in lines) == Counter(sent)
    last = max(committed(out, "totals").items())[1]
    totals = dict(eval(line) for line in last)  # the files hold repr((key, count))
    assert totals == dict(Counter(f"k{int(v[1:]) % 7}" for v in sent))
