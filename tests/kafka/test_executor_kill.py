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


# make test-full: the mid-write test below kills an executor of a Kafka stream too and
# checks every record read exactly once.
@pytest.mark.full
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


def test_an_executor_killed_mid_write_leaves_a_topic_that_dedups_to_the_oracle(
    kafka_broker: KafkaBroker, new_topic: Callable[..., str]
) -> None:
    """saveToKafka after a shuffle, an executor killed in the middle of a write task: the
    retry writes the partition again, its records in another order. A consumer that drops
    copies by ``record_identity`` (as the README says) reads every record exactly once."""
    from dstream.kafka import record_identity
    from tests.kafka.test_sink import read_all

    topic, sink = new_topic(3), new_topic(2)
    args = [sys.executable, "-m", "testbed.kafka_faults", "--bootstrap", kafka_broker.bootstrap]
    args += ["--topic", topic, "--sink-topic", sink, "--records", "1500", "--intervals", "6"]
    args += ["--kill", "1@3"]
    proc = subprocess.run(args, check=False, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-5000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(result["killed"]) == 1, "no write task of the interval was caught mid-write"
    sent = result["sent"]
    # Oracle: the source's records, each once, keyed by the interval that read it.
    oracle = Counter((int(t), v) for t, values in result["values"].items() for v in values)
    assert Counter(v for _, v in oracle) == Counter(sent)

    messages = read_all(kafka_broker, sink, len(sent) + 1)
    kept: dict[tuple[str, int, int, str], tuple[int, bytes]] = {}
    for m in messages:
        identity = record_identity(m.headers())
        kept.setdefault(identity, (identity[1], m.key()))
    assert len(messages) > len(kept), "the killed task wrote no record before the kill"
    consumed = Counter((batch, key.decode()) for batch, key in kept.values())
    assert consumed == oracle  # nothing dropped, nothing doubled, each in its interval
