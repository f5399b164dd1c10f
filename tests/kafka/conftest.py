"""Fixtures for the Kafka tests: one real broker (KRaft, loopback) for the whole session,
a fresh topic per test, and a producer that returns what it wrote.

The broker and ``new_topic`` fixtures are in tests/conftest.py (tests/recovery uses them
too). Every test in this directory gets the ``kafka`` marker (``pytest -m "not kafka"`` skips
them). They need the broker's jars (``make kafka``) and confluent-kafka (the ``kafka``
extra); without them the fixture fails with the command to fix it rather than skipping."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from testbed.kafka import KafkaBroker
from tests.integration.conftest import Harness, harness  # noqa: F401  (the same fixture)

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A conftest hook sees the whole session's items: mark only the ones under this directory.
    for item in items:
        if item.path.is_relative_to(HERE):
            item.add_marker(pytest.mark.kafka)


class Writer:
    """An idempotent producer; ``send`` returns the (key, value) pairs it wrote, once Kafka
    acknowledged every one."""

    def __init__(self, broker: KafkaBroker) -> None:
        from confluent_kafka import Producer

        self._producer = Producer(broker.producer_config())
        self.sent: list[tuple[str, str]] = []

    def send(
        self,
        topic: str,
        records: list[tuple[str, str]],
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> list[tuple[str, str]]:
        for key, value in records:
            kwargs: dict[str, Any] = {} if partition is None else {"partition": partition}
            if timestamp_ms is not None:
                kwargs["timestamp"] = timestamp_ms  # the record's CreateTime
            self._producer.produce(topic, value.encode(), key.encode(), **kwargs)
        assert self._producer.flush(30) == 0, "records not acknowledged"
        self.sent.extend(records)
        return records


@pytest.fixture
def writer(kafka_broker: KafkaBroker) -> Writer:
    return Writer(kafka_broker)


def records(prefix: str, n: int, keys: int = 5) -> list[tuple[str, str]]:
    """n distinct (key, value) records."""
    return [(f"k{i % keys}", f"{prefix}-{i}") for i in range(n)]
