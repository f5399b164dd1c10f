"""kill -9 an executor JVM in the middle of an interval of a Kafka stream while a producer
keeps writing (``python -m testbed.kafka_faults``): the lost tasks re-read exactly their
interval's recorded offsets, so every record is read by exactly one interval and the
running counts per key are exact."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Callable

import pytest

from testbed.kafka import KafkaBroker

pytestmark = pytest.mark.cluster


def test_a_killed_executor_changes_no_count(
    kafka_broker: KafkaBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(3)
    args = [sys.executable, "-m", "testbed.kafka_faults", "--bootstrap", kafka_broker.bootstrap]
    args += ["--topic", topic, "--records", "3000", "--intervals", "8", "--kill", "1@4"]
    proc = subprocess.run(args, check=False, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-5000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(result["killed"]) == 1, result["killed"]
    assert not set(result["killed"]) & set(result["executors_after"])
    sent = result["sent"]
    assert len(sent) == 3000
    read = Counter(v for values in result["values"].values() for v in values)
    assert read == Counter(sent)  # every record, each in exactly one interval
    assert result["totals"] == dict(Counter(f"k{int(v[1:]) % 7}" for v in sent))
    # The kill came while the interval had records to read.
    assert result["values"][str(4 * 1000)]
