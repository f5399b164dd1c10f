"""The Kafka client library (confluent-kafka, an optional dependency) and the settings dstream
gives it.

confluent-kafka is needed only by programs that read or write Kafka, so it is the extra
``kafka`` of the pyspark-dstream distribution (``pip install 'pyspark-dstream[kafka]'``),
not a dependency of the engine. :func:`require_client` raises an error that says so wherever
it is missing — on the driver when a stream is declared, or in a Python worker of an
executor that lacks it.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType
from typing import Any

__all__ = [
    "CLIENT_VERSION",
    "KafkaClientMissingError",
    "consumer_settings",
    "require_client",
    "validate_params",
]

CLIENT_VERSION = ">=2.6,<3"  # the `kafka` extra in pyproject.toml


class KafkaClientMissingError(ImportError):
    """confluent-kafka is not installed where dstream needs it."""


def require_client() -> ModuleType:
    """The ``confluent_kafka`` module, or an error that says how to install it."""
    try:
        import confluent_kafka
    except ImportError as exc:
        raise KafkaClientMissingError(
            "dstream.kafka needs the confluent-kafka package, which is not installed in this "
            "Python (on the driver, or on an executor's Python workers): install the extra "
            f"with `pip install 'pyspark-dstream[kafka]'` (confluent-kafka {CLIENT_VERSION}) on "
            "every machine that runs the program"
        ) from exc
    return confluent_kafka


# Java client settings that mean nothing to librdkafka, and what to use instead.
_JAVA_ONLY = {
    "key.deserializer": "decode keys with keyDecoder= (or messageHandler=)",
    "value.deserializer": "decode values with valueDecoder= (or messageHandler=)",
    "key.serializer": "encode keys with saveToKafka(..., serializer=)",
    "value.serializer": "encode values with saveToKafka(..., serializer=)",
    "zookeeper.connect": "name the brokers in bootstrap.servers (Kafka 4 has no ZooKeeper)",
}


def validate_params(params: object, what: str) -> dict[str, Any]:
    """``kafkaParams``/``producerConfig`` as a plain dict with ``bootstrap.servers``; the
    old consumer's ``metadata.broker.list`` is taken as ``bootstrap.servers``."""
    if not isinstance(params, Mapping):
        raise TypeError(
            f"{what} must be a dict of Kafka settings, e.g. "
            "{'bootstrap.servers': 'host:9092'}, got " + type(params).__name__
        )
    result = {str(k): v for k, v in params.items()}
    if "metadata.broker.list" in result and "bootstrap.servers" not in result:
        result["bootstrap.servers"] = result.pop("metadata.broker.list")
    for key, instead in _JAVA_ONLY.items():
        if key in result:
            raise ValueError(
                f"{what} {key!r} is a setting of Kafka's Java client; dstream uses "
                f"librdkafka (confluent-kafka), which has no such setting: {instead}"
            )
    servers = result.get("bootstrap.servers")
    if not isinstance(servers, str) or not servers:
        raise ValueError(
            f"{what} needs 'bootstrap.servers', the brokers to connect to, e.g. "
            "{'bootstrap.servers': 'host1:9092,host2:9092'}"
        )
    return result


# Settings of the source that only the driver uses, never passed to a task's consumer.
_DRIVER_ONLY = ("auto.offset.reset", "enable.auto.commit", "auto.commit.interval.ms")


def consumer_settings(params: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of a task's consumer: the user's, and what reading fixed ranges needs —
    no group membership or commits (the driver commits), an error instead of a silent
    reset when a range is out of the log, an end-of-partition event to stop at."""
    settings = {k: v for k, v in params.items() if k not in _DRIVER_ONLY}
    settings.setdefault("group.id", "dstream-kafka-reader")
    settings.setdefault("reconnect.backoff.max.ms", 1000)  # back soon after a broker restart
    # A fetch at the log's end waits this long for data that a range never needs; the
    # default (500 ms) made every task after the first in a worker wait for it.
    settings.setdefault("fetch.wait.max.ms", 10)
    # Once its local queue holds queued.min.messages (100,000), librdkafka postpones the
    # next fetch of the partition by this much. A range of 1M 100-byte records on a local
    # broker took 2.6-4.4 s to read with the default (1 s), 0.55-0.67 s at 10 ms
    # (bench/README.md, "Reading Kafka").
    settings.setdefault("fetch.queue.backoff.ms", 10)
    settings.update(
        {
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "error",
        }
    )
    return settings
