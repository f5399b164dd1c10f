"""What a task does: read one fixed offset range of one topic-partition, in the Python worker.

A task gets ``(batch ms, topic, partition, from, until)`` and reads exactly the records with
offsets in ``[from, until)`` — the same ones every time it runs, however often the interval
is recomputed (Kafka's log is immutable until retention deletes it). It assigns the
partition to a consumer (no consumer group membership, no commits), seeks to ``from`` and
consumes until it sees an offset at or past ``until``, or the end of the partition at or
past it (a compacted topic or transaction markers leave gaps, so offsets are not counted).

Consumers are kept per Python worker process (PySpark reuses workers), keyed by their
settings: a task costs a seek, not a new connection. Errors name the range, the interval
and the choices: an offset no longer in the log (retention deleted it before a
recomputation read it), a deleted topic, or no progress for ``poll_timeout_s`` seconds.
"""

from __future__ import annotations

import contextlib
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from dstream.kafka.client import require_client
from dstream.kafka.ranges import KafkaDataLossError, KafkaTopicDeletedError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["KafkaMessage", "TaskSpec", "message_chunks", "utf8_decoder", "value_arrays"]

# (batch time ms, topic, partition, fromOffset, untilOffset)
TaskSpec = tuple[int, str, int, int, int]
Settings = tuple[tuple[str, Any], ...]

_CONSUMERS: OrderedDict[Settings, Any] = OrderedDict()
_MAX_CONSUMERS = 4
_CHUNK = 10_000  # messages per consume() call
_ARRAY_RECORDS = 65_536  # records per Arrow array of the columnar reader


def utf8_decoder(data: bytes | None) -> str | None:
    """Decode UTF-8 bytes (``None`` stays ``None``): the default key and value decoder, as
    ``pyspark.streaming.kafka.utf8_decoder``."""
    return None if data is None else data.decode("utf-8")


class KafkaMessage:
    """One record as ``messageHandler`` sees it (``pyspark.streaming.kafka``'s
    ``MessageAndMetadata``): ``topic``, ``partition``, ``offset``, ``timestamp`` (ms, or
    None), ``headers`` (list of (str, bytes)), and ``key()`` / ``message()`` decoded by the
    stream's decoders (``rawKey``/``rawMessage`` are the bytes)."""

    __slots__ = (
        "_kd",
        "_vd",
        "headers",
        "offset",
        "partition",
        "rawKey",
        "rawMessage",
        "timestamp",
        "topic",
    )

    def __init__(
        self,
        topic: str,
        partition: int,
        offset: int,
        raw_key: bytes | None,
        raw_message: bytes | None,
        timestamp: int | None = None,
        headers: list[tuple[str, bytes]] | None = None,
        key_decoder: Callable[[bytes | None], Any] = utf8_decoder,
        value_decoder: Callable[[bytes | None], Any] = utf8_decoder,
    ) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.rawKey = raw_key
        self.rawMessage = raw_message
        self.timestamp = timestamp
        self.headers = headers or []
        self._kd = key_decoder
        self._vd = value_decoder

    def key(self) -> Any:
        return self._kd(self.rawKey)

    def message(self) -> Any:
        return self._vd(self.rawMessage)

    def __repr__(self) -> str:
        return f"KafkaMessage({self.topic}-{self.partition}@{self.offset})"


def from_confluent(
    m: Any, key_decoder: Callable[[bytes | None], Any], value_decoder: Callable[[bytes | None], Any]
) -> KafkaMessage:
    kind, ts = m.timestamp()
    return KafkaMessage(
        m.topic(),
        m.partition(),
        m.offset(),
        m.key(),
        m.value(),
        ts if kind else None,
        m.headers(),
        key_decoder,
        value_decoder,
    )


def _consumer(settings: Settings) -> Any:
    ck = require_client()
    consumer = _CONSUMERS.pop(settings, None)
    if consumer is None:
        consumer = ck.Consumer(dict(settings))
    _CONSUMERS[settings] = consumer
    while len(_CONSUMERS) > _MAX_CONSUMERS:
        _, old = _CONSUMERS.popitem(last=False)
        with contextlib.suppress(Exception):
            old.close()
    return consumer


def message_chunks(
    settings: Settings, spec: TaskSpec, poll_timeout_s: float
) -> Iterator[list[Any]]:
    """The messages of ``spec``'s range, in offset order, in lists of up to 10,000."""
    ck = require_client()
    batch_ms, topic, partition, start, until = spec
    consumer = _consumer(settings)
    consumer.assign([ck.TopicPartition(topic, partition, start)])
    eof, fatal = ck.KafkaError._PARTITION_EOF, _fatal_codes(ck)
    position = start
    last_progress = time.monotonic()
    last_error: Any = None
    try:
        while position < until:
            messages = consumer.consume(num_messages=min(_CHUNK, until - position), timeout=1.0)
            out = []
            done = False
            for m in messages:
                err = m.error()
                if err is not None:
                    if err.code() == eof:
                        done = m.offset() >= until  # the log ends at or past the range
                        if done:
                            break
                        continue
                    if err.code() in fatal or err.fatal():
                        _raise_for(consumer, ck, err, spec, position)
                    last_error = err  # transient (a broker restarting): keep polling
                    continue
                offset = m.offset()
                if offset >= until:
                    done = True
                    break
                if offset >= position:
                    out.append(m)
                    position = offset + 1
            if out:
                last_progress = time.monotonic()
                yield out
            if done:
                return
            if time.monotonic() - last_progress > poll_timeout_s:
                raise TimeoutError(
                    f"Kafka {topic}-{partition}: interval {batch_ms} ms reads offsets "
                    f"[{start}, {until}) and got no record past {position - 1} for "
                    f"{poll_timeout_s:g} s (last error: {last_error}); check that the brokers "
                    f"in bootstrap.servers={dict(settings).get('bootstrap.servers')} are up, "
                    "or raise pollTimeout"
                )
    finally:
        with contextlib.suppress(Exception):
            consumer.unassign()  # stop fetching past the range


def _fatal_codes(ck: Any) -> set[int]:
    e = ck.KafkaError
    return {
        e.OFFSET_OUT_OF_RANGE,
        e._AUTO_OFFSET_RESET,
        e.UNKNOWN_TOPIC_OR_PART,
        e._UNKNOWN_PARTITION,
        e._UNKNOWN_TOPIC,
        e.TOPIC_AUTHORIZATION_FAILED,
        e.GROUP_AUTHORIZATION_FAILED,
    }


def _raise_for(consumer: Any, ck: Any, err: Any, spec: TaskSpec, position: int) -> None:
    batch_ms, topic, partition, start, until = spec
    head = (
        f"Kafka {topic}-{partition}: interval {batch_ms} ms reads offsets [{start}, {until}) "
        "(on record in the metadata journal, so that a recomputation reads the same records)"
    )
    e = ck.KafkaError
    if err.code() in (e.UNKNOWN_TOPIC_OR_PART, e._UNKNOWN_TOPIC, e._UNKNOWN_PARTITION):
        raise KafkaTopicDeletedError(
            f"{head}, but the topic-partition no longer exists ({err.str()}): the topic was "
            "deleted, so this interval cannot be read. Choices: remove the topic from the "
            "program and start from a new checkpoint directory"
        )
    if err.code() in (e.OFFSET_OUT_OF_RANGE, e._AUTO_OFFSET_RESET):
        low = high = "?"
        with contextlib.suppress(Exception):
            low, high = consumer.get_watermark_offsets(
                ck.TopicPartition(topic, partition), timeout=5, cached=False
            )
        raise KafkaDataLossError(
            f"{head}, but offset {position} is no longer in the log, which now holds "
            f"[{low}, {high}): retention deleted it before this interval was (re)computed, so "
            "it cannot be recomputed exactly. Choices: keep records longer than a recovery "
            "needs (the topic's retention.ms well above the state checkpoint interval plus "
            "the time a restart takes); or restart from a new checkpoint directory with "
            "fromOffsets saying where to start"
        )
    raise RuntimeError(f"{head}, but Kafka refused: {err.str()}")


def value_arrays(
    settings: Settings, spec: TaskSpec, poll_timeout_s: float, as_text: bool
) -> Iterator[pa.Array]:
    """The values of ``spec``'s range as Arrow arrays of up to 65,536 records (strings, with
    invalid UTF-8 replaced by U+FFFD, or binary); a record without a value is null."""
    values: list[bytes | None] = []
    for chunk in message_chunks(settings, spec, poll_timeout_s):
        values.extend(m.value() for m in chunk)
        while len(values) >= _ARRAY_RECORDS:
            yield _array(values[:_ARRAY_RECORDS], as_text)
            del values[:_ARRAY_RECORDS]
    if values:
        yield _array(values, as_text)


def _array(values: list[bytes | None], as_text: bool) -> pa.Array:
    import pyarrow as pa

    binary = pa.array(values, type=pa.binary())
    if not as_text:
        return binary
    try:
        return binary.cast(pa.string())
    except pa.ArrowInvalid:  # invalid UTF-8 (rare): replace, record by record
        return pa.array(
            [None if v is None else v.decode("utf-8", errors="replace") for v in values],
            type=pa.string(),
        )
