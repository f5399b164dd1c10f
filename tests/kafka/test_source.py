"""createDirectStream against a real broker: every interval reads exactly the records
produced before it, in fixed offset ranges, and reports them to listeners."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from dstream import StreamingJobError, StreamingListener
from dstream.kafka import createDirectBatchStream, createDirectStream
from dstream.scheduler.engine import engine_of
from dstream.testing.streams import BatchCollector
from testbed.kafka import KafkaBroker
from tests.kafka.conftest import Harness, Writer, records


class Infos(StreamingListener):
    def __init__(self) -> None:
        self.batches: list[Any] = []

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        self.batches.append(batchCompleted.batchInfo())


def params(broker: KafkaBroker, **more: Any) -> dict[str, Any]:
    return {"bootstrap.servers": broker.bootstrap, **more}


def committed(broker: KafkaBroker, group: str, topic: str, partitions: int) -> dict[int, int]:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    request = ConsumerGroupTopicPartitions(
        group, [TopicPartition(topic, p) for p in range(partitions)]
    )
    admin = broker.admin()  # kept alive until the answer came (its futures die with it)
    answer = admin.list_consumer_group_offsets([request])[group].result(30)
    return {tp.partition: tp.offset for tp in answer.topic_partitions}


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 30) -> None:
    """For state outside the engine (Kafka's), which no engine event announces."""
    pause = threading.Event()
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        pause.wait(0.05)


def test_each_interval_reads_exactly_what_was_produced_before_it(
    harness: Callable[..., Harness],
    kafka_broker: KafkaBroker,
    new_topic: Callable[..., str],
    writer: Writer,
) -> None:
    topic = new_topic(3)
    writer.send(topic, records("before-start", 40))  # latest at start: never read
    h = harness()
    stream = createDirectStream(h.ssc, [topic], params(kafka_broker, **{"group.id": "g-exact"}))
    got = BatchCollector(stream)
    infos = Infos()
    h.ssc.addStreamingListener(infos)
    h.ssc.start()
    sent = []
    for i in range(4):
        sent.append(writer.send(topic, records(f"interval{i}", 25 * i)))  # 0 in the first
        h.run_batches(1)
    engine_of(h.ssc).bus.wait_until_empty(30)
    assert [Counter(batch) for batch in got.in_order()] == [Counter(batch) for batch in sent]
    # Listeners see each interval's count and its offset ranges, which add up to it.
    for info, batch in zip(infos.batches, sent, strict=True):
        (stream_info,) = info.streamIdToInputInfo().values()
        assert stream_info.numRecords() == len(batch)
        ranges = stream_info.metadata()["offsetRanges"]
        assert sum(r["untilOffset"] - r["fromOffset"] for r in ranges) == len(batch)
        assert {r["topic"] for r in ranges} <= {topic}
    # Completed ranges are committed to the consumer group (for monitoring).
    ends = kafka_broker.end_offsets(topic)
    wait_until(lambda: committed(kafka_broker, "g-exact", topic, 3) == ends, "group offsets")
    h.ssc.awaitTerminationOrTimeout(0)


def test_a_backlog_is_spread_over_intervals_by_the_cap_in_offset_order(
    harness: Callable[..., Harness],
    kafka_broker: KafkaBroker,
    new_topic: Callable[..., str],
    writer: Writer,
) -> None:
    topic = new_topic(1)
    writer.send(topic, records("backlog", 250))
    h = harness()
    stream = createDirectStream(
        h.ssc,
        [topic],
        params(kafka_broker, **{"auto.offset.reset": "earliest"}),
        messageHandler=lambda m: (m.topic, m.partition, m.offset, m.key(), m.message()),
        maxRecordsPerPartition=100,
    )
    got = BatchCollector(stream)
    h.ssc.start()
    h.run_batches(4)
    batches = got.in_order()
    assert [len(b) for b in batches] == [100, 100, 50, 0]
    flat = [m for b in batches for m in sorted(b)]
    assert [m[2] for m in flat] == list(range(250))
    assert [(m[3], m[4]) for m in flat] == writer.sent
    assert {m[:2] for m in flat} == {(topic, 0)}


def test_intervals_planned_late_read_what_arrived_by_their_own_time(
    harness: Callable[..., Harness],
    kafka_broker: KafkaBroker,
    new_topic: Callable[..., str],
    writer: Writer,
) -> None:
    """Three intervals' records are in the log before any of them is planned (a backlog, a
    driver catching up): cut at each interval's time (record timestamps), each reads its
    own; cut at the log end, the first reads all and the next ones nothing (what one run
    saw: one interval read 60,000 records, the next ~49 none)."""
    t0 = (int(time.time() * 1000) // 1000 - 600) * 1000  # ten minutes ago, on the grid
    topic = new_topic(2)
    sent = [
        writer.send(topic, records(f"interval{i}", 10 * (i + 1)), timestamp_ms=t0 + i * 1000 + 500)
        for i in range(3)
    ]  # interval i + 1 is (t0 + i s, t0 + (i + 1) s]
    got: dict[str, list[list[Any]]] = {}
    for mode in ("time", "end"):
        h = harness(start_ms=t0)
        stream = createDirectStream(
            h.ssc,
            [topic],
            params(kafka_broker, **{"auto.offset.reset": "earliest"}),
            cutRangesAt=mode,
        )
        collected = BatchCollector(stream)
        h.ssc.start()
        h.run_batches(4)
        got[mode] = collected.in_order()
        h.ssc.stop(stopSparkContext=False)
    assert [Counter(b) for b in got["time"]] == [Counter(b) for b in sent] + [Counter()]
    assert [len(b) for b in got["end"]] == [60, 0, 0, 0]


def _slow(record: Any) -> Any:
    time.sleep(0.002)  # a cost per record: backpressure has something to slow down
    return record


def test_backpressure_spreads_a_backlog_at_the_learned_rate_and_reads_each_offset_once(
    harness: Callable[..., Harness],
    kafka_broker: KafkaBroker,
    new_topic: Callable[..., str],
    writer: Writer,
) -> None:
    """StreamingSettings(backpressure=True): each interval reads at most the rate learnt
    so far x the interval, spread over the partitions (pyspark.streaming's direct stream
    did the same); the offsets each interval read are the journaled ranges, so the backlog
    is read exactly once, in offset order per partition."""
    from dstream import StreamingSettings

    topic = new_topic(2)
    sent = writer.send(topic, records("backlog", 3000))
    h = harness(settings=StreamingSettings(backpressure=True))
    stream = createDirectStream(
        h.ssc, [topic], params(kafka_broker, **{"auto.offset.reset": "earliest"})
    )
    source = engine_of(h.ssc).graph.inputs[0]
    got = BatchCollector(stream.map(_slow))
    infos = Infos()
    h.ssc.addStreamingListener(infos)
    source.set_rate_limit(400.0)  # as spark.streaming.backpressure.initialRate=400
    h.ssc.start()
    caps = []
    while sum(len(b) for b in got.in_order()) < len(sent):
        caps.append(source._records_allowed())
        h.run_batches(1)
        engine_of(h.ssc).bus.wait_until_empty(30)
        assert len(caps) < 60, f"the backlog is not read: {[len(b) for b in got.in_order()]}"
    counts = [len(b) for b in got.in_order()]
    assert counts[0] == 400  # 200 per partition, from the initial rate
    for cap, count in zip(caps, counts, strict=True):
        assert count <= cap  # each interval within the allowance it was cut under
    assert len(counts) >= 3  # 3000 records did not fit in one interval at the learnt rate
    assert Counter(m for b in got.in_order() for m in b) == Counter(sent)  # each once
    # The progress records carry the rate each interval left for the next.
    assert h.ssc.lastProgress["sources"][0]["rateLimit"] == round(source._rate_limit, 1)


def test_from_offsets_and_new_partitions(
    harness: Callable[..., Harness],
    kafka_broker: KafkaBroker,
    new_topic: Callable[..., str],
    writer: Writer,
) -> None:
    topic = new_topic(2)
    p0 = writer.send(topic, records("p0", 10), partition=0)
    p1 = writer.send(topic, records("p1", 10), partition=1)
    h = harness()
    stream = createDirectStream(h.ssc, [topic], params(kafka_broker), {(topic, 0): 4})
    got = BatchCollector(stream)
    h.ssc.start()
    h.run_batches(1)
    # Partition 0 from offset 4; partition 1 from the latest offset (the default).
    assert sorted(got.in_order()[0]) == sorted(p0[4:])
    assert p1  # written before start, so not read
    kafka_broker.add_partitions(topic, 4)
    new = Writer(kafka_broker).send(topic, records("p3", 7), partition=3)  # knows partition 3
    h.run_batches(1)
    assert sorted(got.in_order()[1]) == sorted(new)


def test_the_columnar_stream_reads_the_same_values_as_arrays(
    harness: Callable[..., Harness],
    kafka_broker: KafkaBroker,
    new_topic: Callable[..., str],
    writer: Writer,
) -> None:
    topic = new_topic(2)
    sent = writer.send(
        topic, [(f"k{i}", f"line {i} {'error' if i % 7 == 0 else 'ok'}") for i in range(300)]
    )
    h = harness()
    kafka = params(kafka_broker, **{"auto.offset.reset": "earliest"})
    batches = createDirectBatchStream(h.ssc, [topic], kafka)
    arrays = BatchCollector(batches.dstream)
    errors = BatchCollector(batches.contains("error").count())
    words = BatchCollector(batches.words().countByValue())
    h.ssc.start()
    h.run_batches(1)
    (interval,) = arrays.in_order()
    assert all(type(a).__name__ == "StringArray" for a in interval)
    assert sorted(v for a in interval for v in a.to_pylist()) == sorted(v for _, v in sent)
    assert errors.in_order() == [[sum("error" in v for _, v in sent)]]
    want = Counter(w for _, v in sent for w in v.split())
    assert dict(words.in_order()[0]) == dict(want)


def test_a_missing_topic_is_refused_at_start(
    harness: Callable[..., Harness], kafka_broker: KafkaBroker
) -> None:
    h = harness()
    stream = createDirectStream(h.ssc, ["no-such-topic"], params(kafka_broker))
    BatchCollector(stream)
    with pytest.raises(ValueError, match=r"topic\(s\) no-such-topic do not exist on bootstrap"):
        h.ssc.start()


def test_bad_arguments_are_refused_when_the_stream_is_declared(
    harness: Callable[..., Harness], kafka_broker: KafkaBroker
) -> None:
    h = harness()
    with pytest.raises(TypeError, match="topics must be a non-empty list of topic names"):
        createDirectStream(h.ssc, "events", params(kafka_broker))
    with pytest.raises(ValueError, match="maxRecordsPerPartition 0 must be an int >= 1"):
        createDirectStream(h.ssc, ["a"], params(kafka_broker), maxRecordsPerPartition=0)
    with pytest.raises(ValueError, match=r"'key\.deserializer' is a setting of Kafka's Java"):
        createDirectStream(h.ssc, ["a"], params(kafka_broker, **{"key.deserializer": "x"}))


def test_records_deleted_before_they_were_read_fail_the_interval_by_name(
    harness: Callable[..., Harness],
    kafka_broker: KafkaBroker,
    new_topic: Callable[..., str],
    writer: Writer,
) -> None:
    from confluent_kafka import TopicPartition

    topic = new_topic(1)
    h = harness()
    stream = createDirectStream(h.ssc, [topic], params(kafka_broker), maxRecordsPerPartition=10)
    BatchCollector(stream)
    h.ssc.start()
    h.run_batches(1)
    writer.send(topic, records("x", 40))
    # What retention does: the log's start moves past offsets the stream has not read.
    admin = kafka_broker.admin()
    for future in admin.delete_records([TopicPartition(topic, 0, 25)]).values():
        future.result(30)
    h.run_batches(1)
    with pytest.raises(StreamingJobError) as err:
        h.ssc.awaitTerminationOrTimeout(0)
    message = str(err.value)
    assert f"Kafka {topic}-0: the stream's next offset 0 is no longer in the log" in message
    assert "which now starts at 25" in message
    assert "failOnDataLoss=False" in message


def test_failOnDataLoss_false_skips_deleted_records_and_says_so(
    harness: Callable[..., Harness],
    kafka_broker: KafkaBroker,
    new_topic: Callable[..., str],
    writer: Writer,
) -> None:
    from confluent_kafka import TopicPartition

    topic = new_topic(1)
    h = harness()
    stream = createDirectStream(h.ssc, [topic], params(kafka_broker), failOnDataLoss=False)
    got = BatchCollector(stream)
    infos = Infos()
    h.ssc.addStreamingListener(infos)
    h.ssc.start()
    h.run_batches(1)
    sent = writer.send(topic, records("x", 40))
    admin = kafka_broker.admin()
    for future in admin.delete_records([TopicPartition(topic, 0, 25)]).values():
        future.result(30)
    h.run_batches(1)
    engine_of(h.ssc).bus.wait_until_empty(30)
    assert sorted(got.in_order()[1]) == sorted(sent[25:])
    (info,) = infos.batches[1].streamIdToInputInfo().values()
    assert any("Skipped to 25" in note for note in info.metadata()["notes"])
    h.ssc.awaitTerminationOrTimeout(0)


def test_a_deleted_topic_fails_the_interval_by_name(
    harness: Callable[..., Harness],
    kafka_broker: KafkaBroker,
    new_topic: Callable[..., str],
    writer: Writer,
) -> None:
    topic = new_topic(2)
    h = harness()
    stream = createDirectStream(h.ssc, [topic], params(kafka_broker))
    BatchCollector(stream)
    h.ssc.start()
    writer.send(topic, records("x", 10))
    h.run_batches(1)
    kafka_broker.delete_topic(topic)
    h.run_batches(1)
    with pytest.raises(StreamingJobError) as err:
        h.ssc.awaitTerminationOrTimeout(0)
    message = str(err.value)
    assert f"Kafka topic '{topic}' no longer exists" in message
    assert "remove it from topics" in message
