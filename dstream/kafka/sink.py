"""Writing a stream to Kafka: ``saveToKafka(stream, topic, producerConfig)``.

Each interval is written by its tasks with an idempotent producer (``enable.idempotence``,
``acks=all``: a producer's retries never duplicate or reorder a record), and every record
carries the identity of what wrote it in its headers::

    dstream.output      the output's name (default "saveToKafka-<topic>")
    dstream.batch_ms    the interval's batch time, ms
    dstream.partition   the index of the RDD partition (task) that wrote it
    dstream.record      <digest>-<n>: a digest of the record's key and value bytes, and how
                        many records of the partition with the same bytes came before it

An interval's RDD partition holds the same records on every computation, but not always in
the same order: after a shuffle (``reduceByKey``...) the order within a reduce partition is
the order its shuffle blocks were fetched, which differs between two computations on a
cluster. The identity is therefore taken from the record itself, not its position: every
computation of a partition gives the same set of identities, and one identity always names
the same bytes (two records with equal bytes are told apart by ``n``, and either copy of
them is the same record to a consumer).

A record can be written more than once: a task retried after an executor loss, or an
interval whose output was cut short by a driver crash and redone after the restart (an
interval that completed is never written again: the output keeps a commit log, as ``save``
does). A consumer that needs exactly-once drops records whose identity
(:func:`record_identity`) it has seen; it needs no transactions (``read_uncommitted``, the
default isolation, is fine).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from dstream.functions import check_callable, guard
from dstream.kafka.client import require_client, validate_params

if TYPE_CHECKING:
    from pyspark import RDD

    from dstream.dstream import DStream
    from dstream.time import Time

__all__ = ["HEADERS", "named_records", "record_identity", "saveToKafka"]

HEADERS = ("dstream.output", "dstream.batch_ms", "dstream.partition", "dstream.record")

Serializer = Callable[[Any], tuple[Any, Any]]

_PRODUCERS: dict[tuple[tuple[str, Any], ...], Any] = {}


def _encode(value: Any, what: str) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    raise TypeError(
        f"saveToKafka() {what} {value!r} is a {type(value).__name__}; keys and values are "
        "written as bytes or str (UTF-8): pass serializer=lambda record: (key, value) "
        "returning bytes or str"
    )


def default_serializer(record: Any) -> tuple[bytes | None, bytes | None]:
    """A ``(key, value)`` pair is a keyed record; anything else is a value without a key."""
    if isinstance(record, tuple) and len(record) == 2:
        return _encode(record[0], "key"), _encode(record[1], "value")
    return None, _encode(record, "value")


def named_records(pairs: Iterable[tuple[Any, Any]]) -> Iterator[tuple[Any, Any, str]]:
    """Each serialized ``(key, value)`` (bytes, str or None) of one partition with its
    ``dstream.record`` header, in order (pure): ``<digest>-<n>``, the digest of the key
    and value bytes and the number of earlier records with the same bytes. Any order of
    the same records gives the same set of names, and a name always stands for the same
    bytes."""
    seen: dict[bytes, int] = {}
    for key, value in pairs:
        h = hashlib.blake2b(digest_size=16)
        for part in (key, value):  # None and b"" differ; the length keeps the split unique
            data = part.encode() if isinstance(part, str) else part
            h.update(b"N" if data is None else b"B%d:" % len(data) + data)
        digest = h.digest()
        n = seen.get(digest, 0)
        seen[digest] = n + 1
        yield key, value, f"{digest.hex()}-{n}"


def record_identity(headers: Iterable[tuple[str, bytes]] | None) -> tuple[str, int, int, str]:
    """``(output, batch ms, partition, record)`` from a record's headers
    (``message.headers()`` of confluent-kafka, ``KafkaMessage.headers``): equal for every
    copy of one record that saveToKafka wrote, and different for any two records of an
    interval, however often and in whatever order its partitions were computed."""
    found = {k: v for k, v in headers or () if k in HEADERS}
    missing = [h for h in HEADERS if h not in found]
    if missing:
        raise ValueError(
            f"the record has no {', '.join(missing)} header(s): it was not written by "
            "dstream.kafka.saveToKafka"
        )
    output = found["dstream.output"].decode()
    batch, part = (int(found[h]) for h in HEADERS[1:3])
    return output, batch, part, found["dstream.record"].decode()


def _producer(settings: tuple[tuple[str, Any], ...]) -> Any:
    producer = _PRODUCERS.get(settings)
    if producer is None:
        producer = require_client().Producer(dict(settings))
        _PRODUCERS[settings] = producer
    return producer


def write_partition(
    settings: tuple[tuple[str, Any], ...],
    topic: str,
    output: str,
    batch_ms: int,
    partition: int,
    records: Iterable[Any],
    serialize: Serializer,
    flush_timeout_s: float,
) -> int:
    """Produce one RDD partition's records and wait until Kafka acknowledged every one;
    raise if any was refused. Returns how many were written."""
    producer = _producer(settings)
    failures: list[str] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            failures.append(err.str())

    head = [
        ("dstream.output", output.encode()),
        ("dstream.batch_ms", str(batch_ms).encode()),
        ("dstream.partition", str(partition).encode()),
    ]
    n = 0
    for n, (key, value, name) in enumerate(named_records(map(serialize, records)), 1):
        headers = [*head, ("dstream.record", name.encode())]
        while True:
            try:
                producer.produce(topic, value, key, headers=headers, on_delivery=delivered)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.1)
        if n % 1000 == 0:
            producer.poll(0)
    left = producer.flush(flush_timeout_s)
    if left or failures:
        raise RuntimeError(
            f"saveToKafka({topic!r}): interval {batch_ms} ms, partition {partition}: "
            f"{len(failures)} record(s) refused and {left} not acknowledged within "
            f"{flush_timeout_s:g} s ({'; '.join(failures[:3])}); the task fails and Spark "
            "retries it (consumers drop the copies by their dstream.* headers)"
        )
    return n


def saveToKafka(
    stream: DStream[Any],
    topic: str,
    producerConfig: dict[str, Any],
    serializer: Serializer | None = None,
    *,
    name: str | None = None,
    flushTimeout: float = 120.0,
) -> None:
    """Write every interval of ``stream`` to ``topic``; see the module docstring.

    Records are ``(key, value)`` pairs or plain values (no key), each bytes or str, unless
    ``serializer(record) -> (key, value)`` says otherwise. ``producerConfig`` holds
    confluent-kafka producer settings (``bootstrap.servers`` at least); idempotence is
    switched on and may not be switched off.

    >>> saveToKafka(counts, "word-counts", {"bootstrap.servers": "host:9092"})  # doctest: +SKIP
    """
    require_client()
    if not isinstance(topic, str) or not topic:
        raise ValueError(f"saveToKafka() topic {topic!r} must be a non-empty string")
    config = validate_params(producerConfig, "saveToKafka() producerConfig")
    for key, want in (("enable.idempotence", True), ("acks", "all")):
        have = config.get(key, want)
        if str(have).lower() not in (str(want).lower(), "-1" if key == "acks" else "true"):
            raise ValueError(
                f"saveToKafka() producerConfig {key!r}={have!r}: the sink writes with an "
                f"idempotent producer, which needs {key}={want!r}; leave it out"
            )
    config.update({"enable.idempotence": True, "acks": "all"})
    if serializer is not None:
        check_callable(serializer, "saveToKafka", "serializer")
    output = name or f"saveToKafka-{topic}"
    if not isinstance(output, str) or "/" in output:
        raise ValueError(f"saveToKafka() name {output!r} must be a string without '/'")
    settings = tuple(sorted(config.items()))
    serialize = (
        default_serializer
        if serializer is None
        else guard(serializer, f"saveToKafka serializer of {output}")
    )

    def write(time: Time, rdd: RDD[Any]) -> None:
        batch_ms = time.ms

        def write_one(index: int, records: Iterable[Any]) -> Iterable[int]:
            yield write_partition(
                settings, topic, output, batch_ms, index, records, serialize, flushTimeout
            )

        rdd.mapPartitionsWithIndex(write_one).collect()

    stream.save(write, name=output)


def close_producers() -> None:
    """Flush and drop this process's cached producers (tests)."""
    for producer in _PRODUCERS.values():
        with contextlib.suppress(Exception):
            producer.flush(10)
    _PRODUCERS.clear()
