"""Kafka: a direct input stream with exactly-once replay, and a sink.

``createDirectStream`` has the shape PySpark users knew from ``pyspark.streaming.kafka``
(``KafkaUtils.createDirectStream``, removed in Spark 3)::

    from dstream.kafka import createDirectStream

    stream = createDirectStream(ssc, ["events"], {"bootstrap.servers": "host:9092"})
    stream.map(lambda kv: kv[1]).pprint()          # (key, value) pairs, UTF-8 decoded

Each interval's RDD reads fixed offset ranges, one per topic-partition (split into several
tasks when big), decided on the driver when the interval is generated: from where the last
interval ended to the partition's latest offset, capped by ``maxRecordsPerPartition``. The
ranges go into the metadata journal before any output of the interval runs, so a
recomputed interval — lost executors, a driver restarted with ``getOrCreate`` — reads
exactly the same records, and state and outputs are exactly-once end to end. The ends of
a completed interval's ranges are committed to the consumer group (``group.id``), for
monitoring tools only: dstream never reads them back.

The client: confluent-kafka (librdkafka). Records are read inside the Python workers, so
the client's per-record cost is the source's cost: librdkafka fetches and decompresses in
C threads and hands Python ready-made message objects in batches (``consume``), several
times faster than the pure-Python kafka-python; it is maintained by Confluent alongside
librdkafka, ships manylinux wheels with librdkafka inside (no build, no system library),
supports every Kafka 4 broker feature the source needs (ListOffsets with isolation levels,
consumer group offsets through the admin API) and has no Python dependencies. aiokafka is
asyncio-only, which buys nothing inside a task. It is the optional extra ``kafka``:
``pip install 'pyspark-dstream[kafka]'``.

``saveToKafka(stream, topic, producerConfig)`` writes a stream with an idempotent producer
and the interval's identity in every record's headers (see :mod:`dstream.kafka.sink`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dstream.dstream import handle_for
from dstream.functions import UserFunction, call_site, check_callable, guard
from dstream.jvm import live_conf
from dstream.kafka.client import KafkaClientMissingError, require_client, validate_params
from dstream.kafka.ranges import (
    EARLIEST,
    LATEST,
    KafkaDataLossError,
    KafkaTopicDeletedError,
    OffsetRange,
    TopicAndPartition,
    normalize_from_offsets,
    parse_offset_reset,
)
from dstream.kafka.reader import KafkaMessage, from_confluent, utf8_decoder
from dstream.kafka.sink import record_identity, saveToKafka
from dstream.streams.graph import graph_of
from dstream.time import Duration, to_duration

if TYPE_CHECKING:
    from dstream.api.columnar import BatchStream
    from dstream.context import StreamingContext
    from dstream.dstream import DStream
    from dstream.kafka.source import Converter, KafkaInputDStream, SourceOptions

__all__ = [
    "EARLIEST",
    "LATEST",
    "KafkaClientMissingError",
    "KafkaDataLossError",
    "KafkaMessage",
    "KafkaTopicDeletedError",
    "KafkaUtils",
    "OffsetRange",
    "TopicAndPartition",
    "createDirectBatchStream",
    "createDirectStream",
    "record_identity",
    "saveToKafka",
    "utf8_decoder",
]

Decoder = Callable[[bytes | None], Any]


def createDirectStream(
    ssc: StreamingContext,
    topics: list[str],
    kafkaParams: dict[str, Any],
    fromOffsets: Mapping[Any, int] | None = None,
    keyDecoder: Decoder = utf8_decoder,
    valueDecoder: Decoder = utf8_decoder,
    messageHandler: Callable[[KafkaMessage], Any] | None = None,
    *,
    maxRecordsPerPartition: int | None = None,
    maxRecordsPerTask: int | None = 500_000,
    failOnDataLoss: bool = True,
    commitOffsets: bool = True,
    pollTimeout: float = 120.0,
    driverTimeout: float = 5.0,
    rangesRemember: object = "60s",
    cutRangesAt: str = "auto",
) -> DStream[Any]:
    """A stream of the records of ``topics``, read in fixed offset ranges per interval.

    - Records are ``(keyDecoder(key), valueDecoder(value))`` (UTF-8 strings by default),
      or ``messageHandler(KafkaMessage)`` (topic, partition, offset, timestamp, headers,
      ``key()``, ``message()``) when given.
    - ``kafkaParams``: confluent-kafka consumer settings; ``bootstrap.servers`` is
      required. ``auto.offset.reset`` (``latest`` by default, or ``earliest``) says where
      partitions start that ``fromOffsets`` does not name, as of ``ssc.start()``;
      ``group.id`` is the consumer group the completed ranges are committed to.
    - ``fromOffsets``: ``{TopicAndPartition(topic, p): offset}`` (or ``(topic, p)`` keys;
      ``EARLIEST``/``LATEST`` as offsets). Partitions added to a topic later are read from
      their earliest offset.
    - ``maxRecordsPerPartition``: at most this many offsets per partition per interval
      (default: Spark's ``spark.streaming.kafka.maxRatePerPartition`` x the batch
      interval, if set, else no limit); ``maxRecordsPerTask`` splits bigger ranges.
    - ``failOnDataLoss``: offsets the stream should read but Kafka no longer has
      (retention, a deleted or recreated topic) fail the interval with
      :class:`KafkaDataLossError`, naming them and the choices; ``False`` skips them with
      a warning (and a note in the interval's input metadata).
    - ``pollTimeout``: seconds a task waits without progress before it fails;
      ``driverTimeout``: seconds the driver waits for offsets when it plans an interval
      (an interval whose partitions do not answer reads nothing of them; they are read
      by the next one). ``rangesRemember``: how long each interval's ranges are kept for
      recomputation at least; they are also kept while a state downstream may be rebuilt
      from its last checkpoint (one whose writes lag or fail holds them).
    - ``cutRangesAt``: where an interval's ranges end. ``"end"``: at each partition's log
      end when the interval is planned. ``"time"``: at the interval's own time, by record
      timestamp (Kafka's offsetsForTimes: the first offset whose timestamp is after the
      interval's end), so an interval planned late (a backlog beyond
      ``StreamingSettings.max_backlog``, the intervals a restarted driver catches up) reads
      what arrived by its time, not everything since. ``"auto"`` (default): ``"time"`` for
      intervals planned more than one interval late under the system clock, ``"end"``
      otherwise (an interval on time ends at the log end, one request fewer; a
      ``ManualClock``'s times are not record timestamps).
    """
    require_client()
    params, topic_list, offsets, options = _common(
        ssc,
        "createDirectStream",
        topics,
        kafkaParams,
        fromOffsets,
        maxRecordsPerPartition,
        maxRecordsPerTask,
        failOnDataLoss,
        commitOffsets,
        pollTimeout,
        driverTimeout,
        rangesRemember,
        cutRangesAt,
    )
    site = call_site()
    functions = []
    kd, vd = keyDecoder, valueDecoder
    for fn, arg in ((keyDecoder, "keyDecoder"), (valueDecoder, "valueDecoder")):
        check_callable(fn, "createDirectStream", arg)
        if fn is not utf8_decoder:
            functions.append(UserFunction(f"createDirectStream {arg}", site, fn, "executor"))
    if keyDecoder is not utf8_decoder:
        kd = guard(keyDecoder, f"createDirectStream keyDecoder at {site}")
    if valueDecoder is not utf8_decoder:
        vd = guard(valueDecoder, f"createDirectStream valueDecoder at {site}")
    convert: Converter
    if messageHandler is None:

        def convert(chunk: list[Any]) -> Iterable[Any]:
            return [(kd(m.key()), vd(m.value())) for m in chunk]

    else:
        check_callable(messageHandler, "createDirectStream", "messageHandler")
        functions.append(
            UserFunction("createDirectStream messageHandler", site, messageHandler, "executor")
        )
        handle = guard(messageHandler, f"createDirectStream messageHandler at {site}")

        def convert(chunk: list[Any]) -> Iterable[Any]:
            return [handle(from_confluent(m, kd, vd)) for m in chunk]

    stream = _source(
        ssc, topic_list, params, offsets, options, convert, True, "createDirectStream", functions
    )
    return handle_for(stream)


def createDirectBatchStream(
    ssc: StreamingContext,
    topics: list[str],
    kafkaParams: dict[str, Any],
    fromOffsets: Mapping[Any, int] | None = None,
    *,
    valueType: str = "string",
    maxRecordsPerPartition: int | None = None,
    maxRecordsPerTask: int | None = 500_000,
    failOnDataLoss: bool = True,
    commitOffsets: bool = True,
    pollTimeout: float = 120.0,
    driverTimeout: float = 5.0,
    rangesRemember: object = "60s",
    cutRangesAt: str = "auto",
) -> BatchStream:
    """The values of ``createDirectStream``'s records as Arrow arrays (up to 65,536 values
    each, several per task): a :class:`~dstream.api.columnar.BatchStream`, like
    ``ssc.textBatchStream``, whose ``contains``, ``words``, ``countByValue`` ... work on
    whole arrays. ``valueType`` ``"string"`` (UTF-8, invalid bytes replaced by U+FFFD)
    or ``"binary"``; a record without a value is null. The same ranges, journal and
    options as ``createDirectStream``."""
    from dstream.api.columnar import BatchStream

    require_client()
    if valueType not in ("string", "binary"):
        raise ValueError(
            f"createDirectBatchStream() valueType {valueType!r} must be 'string' (UTF-8 text) "
            "or 'binary' (the bytes as they are)"
        )
    params, topic_list, offsets, options = _common(
        ssc,
        "createDirectBatchStream",
        topics,
        kafkaParams,
        fromOffsets,
        maxRecordsPerPartition,
        maxRecordsPerTask,
        failOnDataLoss,
        commitOffsets,
        pollTimeout,
        driverTimeout,
        rangesRemember,
        cutRangesAt,
    )
    stream = _source(
        ssc,
        topic_list,
        params,
        offsets,
        options,
        None,
        valueType == "string",
        "createDirectBatchStream",
    )
    return BatchStream(handle_for(stream))


class KafkaUtils:
    """``pyspark.streaming.kafka.KafkaUtils``'s entry point, for programs that call
    ``KafkaUtils.createDirectStream(ssc, topics, kafkaParams, ...)``."""

    createDirectStream = staticmethod(createDirectStream)  # noqa: N815 (PySpark's name)
    createDirectBatchStream = staticmethod(createDirectBatchStream)  # noqa: N815


# ---- shared validation ---------------------------------------------------------------------
def _common(
    ssc: StreamingContext,
    what: str,
    topics: object,
    kafka_params: object,
    from_offsets: object,
    max_per_partition: int | None,
    max_per_task: int | None,
    fail_on_data_loss: bool,
    commit_offsets: bool,
    poll_timeout: float,
    driver_timeout: float,
    ranges_remember: object,
    cut_at: str,
) -> tuple[dict[str, Any], list[str], dict[tuple[str, int], int], SourceOptions]:
    from dstream.kafka.source import SourceOptions

    if isinstance(topics, str) or not isinstance(topics, list | tuple) or not topics:
        raise TypeError(
            f"{what}() topics must be a non-empty list of topic names, e.g. ['events'], got "
            f"{topics!r}"
        )
    bad = [t for t in topics if not isinstance(t, str) or not t]
    if bad or len(set(topics)) != len(topics):
        raise ValueError(f"{what}() topics {list(topics)!r} must be distinct non-empty names")
    params = validate_params(kafka_params, f"{what}() kafkaParams")
    parse_offset_reset(params)  # fails now on a bad value
    offsets = normalize_from_offsets(from_offsets, topics)
    if max_per_partition is None:
        rate = live_conf(ssc.sparkContext).get("spark.streaming.kafka.maxRatePerPartition")
        if rate:
            per_interval = int(float(rate) * graph_of(ssc).batch_duration.ms / 1000)
            max_per_partition = max(1, per_interval)
    for value, arg, low in (
        (max_per_partition, "maxRecordsPerPartition", 1),
        (max_per_task, "maxRecordsPerTask", 1),
    ):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < low
        ):
            raise ValueError(f"{what}() {arg} {value!r} must be an int >= {low}, or None")
    for seconds, arg in ((poll_timeout, "pollTimeout"), (driver_timeout, "driverTimeout")):
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds <= 0:
            raise ValueError(f"{what}() {arg} {seconds!r} must be a number of seconds > 0")
    if cut_at not in ("auto", "time", "end"):
        raise ValueError(
            f"{what}() cutRangesAt {cut_at!r} must be 'time' (an interval reads the records "
            "timestamped up to its end), 'end' (up to the log end when it is planned) or "
            "'auto' (time for an interval planned late, under the system clock)"
        )
    remember = to_duration(ranges_remember, f"{what}() rangesRemember")
    if remember < Duration(0):
        raise ValueError(f"{what}() rangesRemember {remember} must not be negative")
    options = SourceOptions(
        max_per_partition=max_per_partition,
        max_per_task=max_per_task,
        min_split=10_000,
        fail_on_data_loss=bool(fail_on_data_loss),
        commit_offsets=bool(commit_offsets),
        poll_timeout_s=float(poll_timeout),
        driver_timeout_s=float(driver_timeout),
        ranges_remember=remember,
        cut_at=cut_at,
    )
    return params, list(topics), offsets, options


def _source(
    ssc: StreamingContext,
    topics: list[str],
    params: dict[str, Any],
    offsets: dict[tuple[str, int], int],
    options: SourceOptions,
    converter: Converter | None,
    as_text: bool,
    name: str,
    user_functions: Sequence[UserFunction] = (),
) -> KafkaInputDStream:
    from dstream.kafka.source import KafkaInputDStream

    return KafkaInputDStream(
        graph_of(ssc),
        topics,
        params,
        offsets,
        options,
        converter=converter,
        as_text=as_text,
        name=name,
        user_functions=user_functions,
    )
