"""saveToKafka: every interval's records land in the topic with the interval's identity in
their headers, so a consumer can drop copies; and a topic round trip through the source."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dstream.kafka import createDirectStream, record_identity, saveToKafka
from dstream.testing.streams import BatchCollector
from testbed.kafka import KafkaBroker
from tests.kafka.conftest import Harness


def read_all(broker: KafkaBroker, topic: str, expected: int) -> list[Any]:
    """Every message of ``topic`` (a fresh consumer from the earliest offset)."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": f"check-{topic}",
            "auto.offset.reset": "earliest",
            "enable.partition.eof": False,
        }
    )
    consumer.subscribe([topic])
    got: list[Any] = []
    try:
        for _ in range(120):
            got.extend(m for m in consumer.consume(1000, timeout=0.5) if m.error() is None)
            if len(got) >= expected:
                break
    finally:
        consumer.close()
    return got


def test_each_record_is_written_once_with_its_interval_identity(
    harness: Callable[..., Harness], kafka_broker: KafkaBroker, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(2)
    h = harness()
    batches = [[("a", "1"), ("b", "2"), ("c", "3")], ["plain value", "another"], []]
    stream = h.ssc.queueStream([h.ssc.sparkContext.parallelize(b, 2) for b in batches])
    saveToKafka(stream, topic, {"bootstrap.servers": kafka_broker.bootstrap}, name="demo")
    h.ssc.start()
    h.run_batches(3)
    h.ssc.awaitTerminationOrTimeout(0)
    messages = read_all(kafka_broker, topic, 5)
    assert len(messages) == 5
    identities = {record_identity(m.headers()): (m.key(), m.value()) for m in messages}
    assert len(identities) == 5  # every record has its own identity
    assert {i[:2] for i in identities} == {("demo", 1000), ("demo", 2000)}
    assert set(identities.values()) == {
        (b"a", b"1"),
        (b"b", b"2"),
        (b"c", b"3"),
        (None, b"plain value"),
        (None, b"another"),
    }
    # (batch, partition, record): the record is named by its bytes, the n-th of them.
    first = sorted(i[2] for i in identities if i[1] == 1000)
    assert first == [0, 1, 1]
    assert all(i[3].endswith("-0") and len(i[3]) == 34 for i in identities)


def test_a_stream_can_be_copied_from_one_topic_to_another(
    harness: Callable[..., Harness], kafka_broker: KafkaBroker, new_topic: Callable[..., str]
) -> None:
    source, target = new_topic(2), new_topic(1)
    h = harness()
    kafka = {"bootstrap.servers": kafka_broker.bootstrap, "auto.offset.reset": "earliest"}
    from confluent_kafka import Producer

    producer = Producer(kafka_broker.producer_config())
    for i in range(50):
        producer.produce(source, f"v{i}".encode(), f"k{i % 4}".encode())
    assert producer.flush(30) == 0
    upper = createDirectStream(h.ssc, [source], kafka).map(lambda kv: (kv[0], kv[1].upper()))
    got = BatchCollector(upper)
    saveToKafka(upper, target, {"bootstrap.servers": kafka_broker.bootstrap})
    h.ssc.start()
    h.run_batches(1)
    messages = read_all(kafka_broker, target, 50)
    assert sorted((m.key().decode(), m.value().decode()) for m in messages) == sorted(
        got.in_order()[0]
    )
    assert len(messages) == 50


def test_the_sink_refuses_settings_that_break_idempotence(
    harness: Callable[..., Harness], kafka_broker: KafkaBroker
) -> None:
    h = harness()
    stream = h.ssc.queueStream([[1]])
    with pytest.raises(ValueError, match=r"'enable\.idempotence'=False: the sink writes with"):
        saveToKafka(
            stream, "t", {"bootstrap.servers": kafka_broker.bootstrap, "enable.idempotence": False}
        )
    with pytest.raises(ValueError, match=r"'acks'=1: the sink writes with an idempotent"):
        saveToKafka(stream, "t", {"bootstrap.servers": kafka_broker.bootstrap, "acks": 1})
