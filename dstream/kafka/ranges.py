"""Which offsets each interval reads: the Kafka source's rules as pure functions.

Every interval, the driver asks Kafka for each partition's earliest and latest offset and
cuts the interval's ranges from the stream's positions (the next offset to read per
topic-partition)::

    range(tp)     = [position(tp), min(latest(tp), position(tp) + maxRecordsPerPartition))
    position(tp) <- the range's end

    with cutRangesAt="time" (by default: an interval planned late under the system clock),
    latest(tp) is first lowered to the first offset whose record timestamp is after the
    interval's end (cut_at_time), never below position(tp)

    a partition seen for the first time           starts at its earliest offset
    position < earliest (retention deleted data)  KafkaDataLossError, or with
                                                  failOnDataLoss=False: skip to earliest
    position > latest (topic recreated, log       KafkaDataLossError, or: skip to latest
      truncated)
    the topic no longer exists                    KafkaTopicDeletedError, or: forget it
    no answer for a partition (broker down)       no range this interval, position kept

A range is then read by one task, or by several when it is big (:func:`split_ranges`). The
ranges of every interval go into the metadata journal, so a recomputed interval reads
exactly the same offsets. Nothing here talks to Kafka.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from dstream.errors import DStreamError

__all__ = [
    "EARLIEST",
    "LATEST",
    "KafkaDataLossError",
    "KafkaTopicDeletedError",
    "OffsetRange",
    "Plan",
    "TopicAndPartition",
    "cut_at_time",
    "describe_ranges",
    "normalize_from_offsets",
    "parse_offset_reset",
    "plan_interval",
    "split_ranges",
    "starting_positions",
]

# Kafka's logical offsets, as fromOffsets values (confluent_kafka.OFFSET_BEGINNING/_END).
EARLIEST = -2
LATEST = -1


class TopicAndPartition(NamedTuple):
    """A topic-partition (``pyspark.streaming.kafka.TopicAndPartition``); equal to the
    plain tuple ``(topic, partition)``."""

    topic: str
    partition: int


TP = tuple[str, int]


@dataclass(frozen=True, order=True)
class OffsetRange:
    """The offsets ``[fromOffset, untilOffset)`` of one topic-partition that one interval
    (or one task of it) reads (``pyspark.streaming.kafka.OffsetRange``)."""

    topic: str
    partition: int
    fromOffset: int  # noqa: N815 (pyspark.streaming.kafka.OffsetRange's names)
    untilOffset: int  # noqa: N815

    @property
    def count(self) -> int:
        """How many offsets the range spans (records, unless the topic is compacted or
        holds transaction markers)."""
        return self.untilOffset - self.fromOffset

    def topicAndPartition(self) -> TopicAndPartition:
        return TopicAndPartition(self.topic, self.partition)

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "fromOffset": self.fromOffset,
            "untilOffset": self.untilOffset,
        }

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition} [{self.fromOffset}, {self.untilOffset})"


class KafkaDataLossError(DStreamError, RuntimeError):
    """Records the stream should read are not in Kafka (any more): deleted by retention,
    a truncated log, a recreated topic. The message names the topic-partition, the
    offsets and the choices."""


class KafkaTopicDeletedError(KafkaDataLossError):
    """A topic the stream reads no longer exists."""


def parse_offset_reset(kafka_params: Mapping[str, Any]) -> str:
    """Where partitions without an explicit starting offset start: ``auto.offset.reset``
    of ``kafkaParams`` (Kafka's ``earliest``/``latest``, the old consumer's
    ``smallest``/``largest``), ``latest`` by default as in Kafka and Spark."""
    value = kafka_params.get("auto.offset.reset", "latest")
    mapping = {
        "earliest": "earliest",
        "smallest": "earliest",
        "beginning": "earliest",
        "latest": "latest",
        "largest": "latest",
        "end": "latest",
    }
    chosen = mapping.get(str(value).lower()) if isinstance(value, str) else None
    if chosen is None:
        raise ValueError(
            f"kafkaParams 'auto.offset.reset' {value!r} must be 'earliest' or 'latest' (or "
            "'smallest'/'largest'); it says where partitions without a fromOffsets entry "
            "start when the stream starts"
        )
    return chosen


def normalize_from_offsets(from_offsets: object, topics: Iterable[str]) -> dict[TP, int]:
    """``fromOffsets`` as ``{(topic, partition): offset}``. Keys are
    :class:`TopicAndPartition`, ``(topic, partition)`` tuples or anything with ``topic``
    and ``partition`` attributes (``confluent_kafka.TopicPartition``); values an offset
    >= 0, or ``EARLIEST`` (-2) / ``LATEST`` (-1)."""
    if from_offsets is None:
        return {}
    if not isinstance(from_offsets, Mapping):
        raise TypeError(
            f"fromOffsets must be a dict {{TopicAndPartition(topic, partition): offset}}, got "
            f"{type(from_offsets).__name__}"
        )
    wanted = set(topics)
    result: dict[TP, int] = {}
    for key, offset in from_offsets.items():
        if isinstance(key, tuple) and len(key) == 2:
            topic, partition = key
        elif hasattr(key, "topic") and hasattr(key, "partition"):
            topic, partition = key.topic, key.partition
        else:
            raise TypeError(
                f"fromOffsets key {key!r} must be TopicAndPartition(topic, partition) or a "
                "(topic, partition) tuple"
            )
        if (
            not isinstance(topic, str)
            or isinstance(partition, bool)
            or not isinstance(partition, int)
        ):
            raise TypeError(f"fromOffsets key {key!r} must be (str topic, int partition)")
        if topic not in wanted:
            raise ValueError(
                f"fromOffsets names topic {topic!r}, which is not among the topics read "
                f"({', '.join(sorted(wanted))}); add it to topics or drop the entry"
            )
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < EARLIEST:
            raise ValueError(
                f"fromOffsets[{topic}-{partition}] {offset!r} must be an offset >= 0, or "
                f"{EARLIEST} (earliest) / {LATEST} (latest)"
            )
        result[(topic, partition)] = offset
    return result


def starting_positions(
    available: Mapping[TP, tuple[int, int]],
    from_offsets: Mapping[TP, int],
    default: str,
) -> dict[TP, int]:
    """The first position of every partition in ``available`` ({tp: (earliest, latest)}):
    its ``fromOffsets`` entry, else ``default`` ('earliest' or 'latest')."""
    positions: dict[TP, int] = {}
    for tp, (earliest, latest) in sorted(available.items()):
        offset = from_offsets.get(tp, EARLIEST if default == "earliest" else LATEST)
        if offset == EARLIEST:
            offset = earliest
        elif offset == LATEST:
            offset = latest
        elif not earliest <= offset <= latest:
            raise KafkaDataLossError(
                f"fromOffsets[{tp[0]}-{tp[1]}] {offset} is outside the offsets Kafka holds "
                f"for it, [{earliest}, {latest}] (earliest, log end); give an offset in that "
                f"range, or {EARLIEST} (earliest) / {LATEST} (latest)"
            )
        positions[tp] = offset
    missing = sorted(set(from_offsets) - set(available))
    if missing:
        names = ", ".join(f"{t}-{p}" for t, p in missing)
        raise ValueError(
            f"fromOffsets names partitions that do not exist: {names}; Kafka lists "
            f"{len(available)} partitions of these topics"
        )
    return positions


@dataclass
class Plan:
    """One interval's ranges and the positions after it; ``notes`` says what was skipped
    (data lost with failOnDataLoss=False, a deleted topic, a partition without an
    answer)."""

    ranges: list[OffsetRange]
    positions: dict[TP, int]
    notes: list[str] = field(default_factory=list)


_CHOICES = (
    "Choices: restart from a new checkpoint directory with fromOffsets (or "
    "kafkaParams auto.offset.reset) saying where to start; pass failOnDataLoss=False to "
    "skip what is missing (each skip is logged and in the interval's input metadata); or "
    "keep records longer (the topic's retention.ms / retention.bytes) so that the "
    "stream reads them in time"
)


def cut_at_time(
    available: Mapping[TP, tuple[int, int]],
    positions: Mapping[TP, int],
    after: Mapping[TP, int],
) -> dict[TP, tuple[int, int]]:
    """``available`` with each partition's log end lowered to ``after`` (the first offset
    whose record timestamp is after the interval's end), so the interval reads what arrived
    by its time. Never below the stream's position (what earlier intervals read stays
    read: timestamps need not grow with offsets), and unchanged where Kafka had no later
    record (``after`` absent or negative) or no answer."""
    out = dict(available)
    for tp, (earliest, latest) in available.items():
        end = after.get(tp)
        if end is None or end < 0 or end >= latest:
            continue
        position = positions.get(tp, earliest)
        out[tp] = (earliest, max(end, min(position, latest), earliest))
    return out


def plan_interval(
    positions: Mapping[TP, int],
    available: Mapping[TP, tuple[int, int]],
    deleted_topics: Iterable[str] = (),
    *,
    max_per_partition: int | None = None,
    fail_on_data_loss: bool = True,
) -> Plan:
    """The ranges of the next interval (see the module docstring for the rules)."""
    deleted = set(deleted_topics)
    ranges: list[OffsetRange] = []
    new_positions: dict[TP, int] = {}
    notes: list[str] = []
    gone = {tp: pos for tp, pos in positions.items() if tp[0] in deleted}
    if gone:
        by_topic: dict[str, dict[int, int]] = {}
        for (topic, partition), pos in sorted(gone.items()):
            by_topic.setdefault(topic, {})[partition] = pos
        for topic, at in by_topic.items():
            what = (
                f"Kafka topic {topic!r} no longer exists (the stream's next offsets were "
                f"{at}, by partition): it was deleted."
            )
            if fail_on_data_loss:
                raise KafkaTopicDeletedError(
                    f"{what} Choices: recreate it and pass failOnDataLoss=False (the stream "
                    "then reads it from its earliest offset); or remove it from topics and "
                    "start from a new checkpoint directory; failOnDataLoss=False also drops a "
                    "deleted topic from the stream, with a warning"
                )
            notes.append(f"{what} Dropped from the stream (failOnDataLoss=False).")
    for tp, pos in sorted(positions.items()):
        if tp in gone:
            continue
        if tp not in available:  # no answer this interval: read it next time
            new_positions[tp] = pos
            notes.append(f"{tp[0]}-{tp[1]}: no offsets from Kafka this interval; kept at {pos}")
            continue
        earliest, latest = available[tp]
        if pos < earliest or pos > latest:
            if pos < earliest:
                what = (
                    f"Kafka {tp[0]}-{tp[1]}: the stream's next offset {pos} is no longer in "
                    f"the log, which now starts at {earliest} (offsets {pos}-{earliest - 1} "
                    f"were deleted, by retention, before they were read; the log ends at "
                    f"{latest})."
                )
                skip_to = earliest
            else:
                what = (
                    f"Kafka {tp[0]}-{tp[1]}: the stream's next offset {pos} is past the "
                    f"log's end {latest} (the topic was recreated or its log truncated; "
                    f"it now holds [{earliest}, {latest}))."
                )
                skip_to = latest
            if fail_on_data_loss:
                raise KafkaDataLossError(f"{what} {_CHOICES}")
            notes.append(f"{what} Skipped to {skip_to} (failOnDataLoss=False).")
        begin = min(max(pos, earliest), latest)
        ranges_end = latest if max_per_partition is None else min(latest, begin + max_per_partition)
        if ranges_end > begin:
            ranges.append(OffsetRange(tp[0], tp[1], begin, ranges_end))
        new_positions[tp] = ranges_end
    for tp, (earliest, latest) in sorted(available.items()):
        if tp in positions or tp[0] in deleted:
            continue
        # A partition seen for the first time (added to the topic): all of it is new.
        end = latest if max_per_partition is None else min(latest, earliest + max_per_partition)
        if end > earliest:
            ranges.append(OffsetRange(tp[0], tp[1], earliest, end))
        new_positions[tp] = end
        notes.append(f"{tp[0]}-{tp[1]}: new partition, read from its earliest offset {earliest}")
    return Plan(sorted(ranges), new_positions, notes)


def split_ranges(
    ranges: Iterable[OffsetRange],
    *,
    max_per_task: int | None = None,
    min_tasks: int = 1,
    min_split: int = 10_000,
) -> list[OffsetRange]:
    """Cut ranges into task-sized pieces (pure, deterministic).

    Each range gets ``ceil(count / max_per_task)`` pieces; then, while there are fewer
    than ``min_tasks`` pieces, the range whose pieces are largest gets one more, as long
    as its pieces stay at least ``min_split`` offsets long (a task costs a consumer's
    fetch round trips: tiny ones cost more than they save). Pieces of a range are equal
    within one offset, in offset order; empty ranges get none.
    """
    work = [r for r in ranges if r.count > 0]
    pieces = [max(1, -(-r.count // max_per_task)) if max_per_task else 1 for r in work]
    while sum(pieces) < min_tasks and work:
        i = max(range(len(work)), key=lambda j: (work[j].count / pieces[j], -j))
        if work[i].count / (pieces[i] + 1) < min_split:
            break
        pieces[i] += 1
    result = []
    for r, k in zip(work, pieces, strict=True):
        for j in range(k):
            lo = r.fromOffset + r.count * j // k
            hi = r.fromOffset + r.count * (j + 1) // k
            result.append(OffsetRange(r.topic, r.partition, lo, hi))
    return result


def describe_ranges(ranges: Iterable[OffsetRange]) -> str:
    """One line per range: ``topic-partition [from, until)``."""
    return "\n".join(str(r) for r in ranges)
