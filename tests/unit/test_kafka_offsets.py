"""KafkaOffsets.snapshot: a stream's start asks again for a partition whose leader is not
settled yet (a topic just created: NOT_LEADER_FOR_PARTITION), instead of failing the
start; an interval's snapshot does not wait (the partition is read next interval)."""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

import pytest

ck = pytest.importorskip("confluent_kafka")

from dstream.kafka.metadata import KafkaOffsets  # noqa: E402


class Admin:
    """An AdminClient whose partitions answer NOT_LEADER ``unsettled`` times first."""

    def __init__(self, unsettled: int, broken: int | None = None) -> None:
        self.unsettled = unsettled
        self.broken = broken  # a partition that always answers a final error
        self.asked = 0

    def list_topics(self, topic: str, timeout: float) -> Any:
        meta = type("Meta", (), {})()
        info = type("Info", (), {"error": None, "partitions": {0: None, 1: None}})()
        meta.topics = {topic: info}
        return meta

    def list_offsets(self, request: dict[Any, Any], **_: Any) -> dict[Any, Future[Any]]:
        self.asked += 1
        answers = {}
        for tp in request:
            future: Future[Any] = Future()
            if tp.partition == self.broken:
                error = ck.KafkaError(ck.KafkaError.TOPIC_AUTHORIZATION_FAILED)
                future.set_exception(ck.KafkaException(error))
            elif self.unsettled > 0:
                error = ck.KafkaError(ck.KafkaError.NOT_LEADER_FOR_PARTITION)
                future.set_exception(ck.KafkaException(error))
            else:
                future.set_result(type("Offset", (), {"offset": 7 * (tp.partition + 1)})())
            answers[tp] = future
        self.unsettled -= 1
        return answers


def offsets(admin: Admin) -> KafkaOffsets:
    client = KafkaOffsets({"bootstrap.servers": "127.0.0.1:1"})
    client._admin = admin
    return client


def test_a_start_asks_again_until_the_leaders_settle() -> None:
    admin = Admin(unsettled=2)
    snap = offsets(admin).snapshot(["t"], 10.0, settle=True)
    assert snap.problems == []
    assert snap.available == {("t", 0): (7, 7), ("t", 1): (14, 14)}
    assert admin.asked > 2


def test_an_interval_does_not_wait_for_an_unsettled_partition() -> None:
    snap = offsets(Admin(unsettled=2)).snapshot(["t"], 10.0)
    assert snap.available == {}
    assert any("Not leader" in p or "NOT_LEADER" in p for p in snap.problems), snap.problems


def test_a_final_error_of_one_partition_is_kept_while_another_settles() -> None:
    snap = offsets(Admin(unsettled=2, broken=0)).snapshot(["t"], 10.0, settle=True)
    assert snap.available == {("t", 1): (14, 14)}
    assert len(snap.problems) == 2, snap.problems  # partition 0, for earliest and latest
    assert all(p.startswith("t-0 ") for p in snap.problems), snap.problems
