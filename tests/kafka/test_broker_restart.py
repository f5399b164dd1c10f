"""The broker goes down mid-run and comes back on the same data directory and port, while a
producer keeps writing: the intervals while it is down read nothing (and say why), the
stream goes on, and every record is read by exactly one interval."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from dstream import StreamingListener
from dstream.kafka import createDirectStream
from dstream.scheduler.engine import engine_of
from dstream.testing.streams import BatchCollector
from testbed.kafka import KafkaBroker
from tests.kafka.conftest import Harness


class Notes(StreamingListener):
    def __init__(self) -> None:
        self.notes: list[str] = []

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        for info in batchCompleted.batchInfo().streamIdToInputInfo().values():
            self.notes.extend(info.metadata().get("notes", []))


class Producing(threading.Thread):
    """Writes numbered records with an idempotent producer until stopped (librdkafka keeps
    and retries them while the broker is down)."""

    def __init__(self, broker: KafkaBroker, topic: str) -> None:
        super().__init__(daemon=True)
        from confluent_kafka import Producer

        self.producer = Producer(broker.producer_config(**{"message.timeout.ms": 120_000}))
        self.topic = topic
        self.sent: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        i = 0
        while not self.stop.wait(0.004):
            value = f"s{i}"
            self.producer.produce(self.topic, value.encode(), f"k{i % 7}".encode())
            self.sent.append(value)
            self.producer.poll(0)
            i += 1

    def finish(self) -> list[str]:
        self.stop.set()
        self.join()
        assert self.producer.flush(120) == 0, "records were not acknowledged"
        return self.sent


def test_a_broker_restart_mid_run_loses_and_doubles_nothing(
    harness: Callable[..., Harness], kafka_broker: KafkaBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(3)
    h = harness()
    stream = createDirectStream(
        h.ssc,
        [topic],
        {"bootstrap.servers": kafka_broker.bootstrap, "auto.offset.reset": "earliest"},
        driverTimeout=1.0,
    )
    got = BatchCollector(stream.map(lambda kv: kv[1]))
    notes = Notes()
    h.ssc.addStreamingListener(notes)
    producing = Producing(kafka_broker, topic)
    producing.start()
    h.ssc.start()
    h.run_batches(2)
    kafka_broker.stop()
    h.run_batches(2)  # no broker: these intervals read nothing
    kafka_broker.start()  # the same data directory and port
    h.run_batches(2)
    sent = producing.finish()
    for _ in range(10):  # catch up with what the producer kept while the broker was down
        if sum(map(len, got.in_order())) >= len(sent):
            break
        h.run_batches(1)
    engine_of(h.ssc).bus.wait_until_empty(30)
    h.ssc.awaitTerminationOrTimeout(0)
    read = Counter(v for batch in got.in_order() for v in batch)
    assert read == Counter(sent)  # every record, each once
    assert len(sent) > 100
    assert any("no metadata" in n or "no offsets" in n for n in notes.notes), notes.notes
