"""What the driver asks Kafka: which partitions the topics have, each one's earliest and
latest offset, and — for monitoring only — committing a consumer group's offsets.

One ``AdminClient`` per stream, on the driver. Every question has a timeout: the answers
decide an interval's ranges while the interval is being generated, so a broker that does
not answer must not stall the engine. What did not answer is simply absent from the result
(those partitions get no range this interval and are read later); a topic the cluster says
does not exist is reported as such.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from dstream.kafka.client import require_client
from dstream.kafka.ranges import TP, OffsetRange

__all__ = ["KafkaOffsets", "Snapshot"]

log = logging.getLogger(__name__)


@dataclass
class Snapshot:
    """Kafka's answer for one interval: {tp: (earliest, latest)} for the partitions that
    answered, the topics the cluster does not have, and what went wrong (if anything)."""

    available: dict[TP, tuple[int, int]] = field(default_factory=dict)
    missing_topics: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)


class KafkaOffsets:
    def __init__(self, params: Mapping[str, Any]) -> None:
        ck = require_client()
        from confluent_kafka.admin import AdminClient

        settings = {
            k: v
            for k, v in params.items()
            if k in _ADMIN_SETTINGS or k.startswith(("security.", "sasl.", "ssl.", "socket."))
        }
        settings.setdefault("reconnect.backoff.max.ms", 1000)
        self._admin = AdminClient(settings)
        self._group = params.get("group.id")
        isolation = str(params.get("isolation.level", "read_committed"))
        self._isolation = (
            ck.IsolationLevel.READ_UNCOMMITTED
            if isolation == "read_uncommitted"
            else ck.IsolationLevel.READ_COMMITTED
        )

    def snapshot(
        self, topics: Iterable[str], timeout_s: float, *, settle: bool = False
    ) -> Snapshot:
        """Partitions and their offsets, within ``timeout_s`` in all. With ``settle`` (a
        stream's start, which needs every partition), a partition whose answer is a
        retriable error (a new topic's leader not yet known to the broker asked:
        NOT_LEADER_FOR_PARTITION) is asked again until the timeout."""
        ck = require_client()
        from confluent_kafka.admin import OffsetSpec

        deadline = time.monotonic() + timeout_s
        snap = Snapshot()
        partitions: list[TP] = []
        for topic in topics:
            try:
                meta = self._admin.list_topics(topic=topic, timeout=_left(deadline))
            except ck.KafkaException as exc:
                snap.problems.append(f"topic {topic}: no metadata ({exc.args[0]})")
                continue
            info = meta.topics.get(topic)
            if info is None or (
                info.error is not None and info.error.code() == ck.KafkaError.UNKNOWN_TOPIC_OR_PART
            ):
                snap.missing_topics.add(topic)
            elif info.error is not None:
                snap.problems.append(f"topic {topic}: {info.error.str()}")
            else:
                partitions.extend((topic, p) for p in sorted(info.partitions))
        if not partitions:
            return snap
        answers: dict[str, dict[TP, int]] = {}
        for name, spec in (("earliest", OffsetSpec.earliest()), ("latest", OffsetSpec.latest())):
            got: dict[TP, int] = {}
            problems: dict[TP | None, str] = {}  # None: the request as a whole
            asked = list(partitions)
            while True:
                retry = self._list_offsets(asked, spec, name, deadline, got, problems)
                if not (settle and retry) or _left(deadline) < 0.3:
                    break
                log.debug("asking again for %s offsets of %s", name, retry)
                time.sleep(0.2)
                asked = retry
            snap.problems.extend(m for tp, m in problems.items() if tp not in got)
            if None in problems:  # the broker did not take the request: ask no more
                return snap
            answers[name] = got
        for tp in partitions:
            if tp in answers["earliest"] and tp in answers["latest"]:
                snap.available[tp] = (answers["earliest"][tp], answers["latest"][tp])
        return snap

    def offsets_after(self, partitions: list[TP], time_ms: int, timeout_s: float) -> dict[TP, int]:
        """For each partition, the first offset whose record timestamp is after ``time_ms``
        (Kafka's offsetsForTimes at ``time_ms + 1``); -1 where no record is that new. A
        partition that did not answer within ``timeout_s`` is absent."""
        from confluent_kafka.admin import OffsetSpec

        got: dict[TP, int] = {}
        problems: dict[TP | None, str] = {}
        spec = OffsetSpec.for_timestamp(time_ms + 1)
        self._list_offsets(partitions, spec, "by time", time.monotonic() + timeout_s, got, problems)
        for message in problems.values():
            log.warning("offsets by time: %s", message)
        return got

    def _list_offsets(
        self,
        partitions: list[TP],
        spec: Any,
        name: str,
        deadline: float,
        got: dict[TP, int],
        problems: dict[TP | None, str],
    ) -> list[TP]:
        """Ask the ``spec`` offsets of ``partitions`` into ``got``, what went wrong into
        ``problems`` (the latest per partition); returns the partitions whose error is
        retriable."""
        ck = require_client()
        # A leadership still settling (a new topic, a restarted broker): the broker's error
        # carries no retriable flag.
        settling = (ck.KafkaError.LEADER_NOT_AVAILABLE, ck.KafkaError.NOT_LEADER_FOR_PARTITION)
        request = {ck.TopicPartition(t, p): spec for t, p in partitions}
        try:
            futures = self._admin.list_offsets(
                request, isolation_level=self._isolation, request_timeout=_left(deadline)
            )
        except ck.KafkaException as exc:
            problems[None] = f"list offsets ({name}): {exc.args[0]}"
            return []
        retry: list[TP] = []
        for ck_tp, future in futures.items():
            tp = (ck_tp.topic, ck_tp.partition)
            try:
                got[tp] = int(future.result(_left(deadline)).offset)
            except Exception as exc:
                problems[tp] = f"{ck_tp.topic}-{ck_tp.partition} {name} offset: {exc}"
                error = exc.args[0] if isinstance(exc, ck.KafkaException) and exc.args else None
                if isinstance(error, ck.KafkaError) and (
                    error.retriable() or error.code() in settling
                ):
                    retry.append(tp)
        return retry

    def commit(self, ranges: Iterable[OffsetRange]) -> None:
        """Record ``untilOffset`` of each range as the consumer group's committed offset,
        asynchronously (monitoring tools read consumer lag from it; dstream never does)."""
        if not self._group:
            return
        ck = require_client()
        ends: dict[TP, int] = {}
        for r in ranges:
            ends[(r.topic, r.partition)] = max(r.untilOffset, ends.get((r.topic, r.partition), 0))
        if not ends:
            return
        request = ck.ConsumerGroupTopicPartitions(
            self._group, [ck.TopicPartition(t, p, o) for (t, p), o in sorted(ends.items())]
        )
        try:
            futures = self._admin.alter_consumer_group_offsets([request], request_timeout=30)
        except ck.KafkaException as exc:
            log.warning("committing offsets of group %s failed: %s", self._group, exc)
            return
        for future in futures.values():
            future.add_done_callback(self._report)

    def _report(self, future: Any) -> None:
        exc = future.exception()
        if exc is not None:
            # Only monitoring depends on it: the stream's own positions are in the journal.
            log.warning("committing offsets of group %s failed: %s", self._group, exc)


def _left(deadline: float) -> float:
    return max(0.05, deadline - time.monotonic())


# Client settings that an AdminClient accepts (besides security.*, sasl.*, ssl.*, socket.*).
_ADMIN_SETTINGS = frozenset(
    {
        "bootstrap.servers",
        "client.id",
        "client.dns.lookup",
        "broker.address.family",
        "reconnect.backoff.ms",
        "reconnect.backoff.max.ms",
        "metadata.max.age.ms",
        "topic.metadata.refresh.interval.ms",
        "debug",
        "log_level",
        "api.version.request",
    }
)
