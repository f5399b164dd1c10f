"""The Kafka source's rules without Kafka: which offsets each interval reads, how ranges are
cut into tasks, where a stream starts, and the errors a user can cause."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dstream.kafka.client import (
    KafkaClientMissingError,
    consumer_settings,
    require_client,
    validate_params,
)
from dstream.kafka.ranges import (
    EARLIEST,
    LATEST,
    KafkaDataLossError,
    KafkaTopicDeletedError,
    OffsetRange,
    TopicAndPartition,
    cut_at_time,
    normalize_from_offsets,
    parse_offset_reset,
    plan_interval,
    split_ranges,
    starting_positions,
)
from dstream.kafka.sink import default_serializer, record_identity

A0, A1, B0 = ("a", 0), ("a", 1), ("b", 0)


# ---- plan_interval ---------------------------------------------------------------------------
def test_each_partition_reads_from_its_position_to_the_log_end() -> None:
    plan = plan_interval({A0: 10, A1: 0}, {A0: (0, 25), A1: (0, 0)})
    assert plan.ranges == [OffsetRange("a", 0, 10, 25)]
    assert plan.positions == {A0: 25, A1: 0}
    assert plan.notes == []


def test_a_cap_per_partition_leaves_the_rest_for_later_intervals() -> None:
    positions = {A0: 0, A1: 5}
    available = {A0: (0, 250), A1: (0, 40)}
    read = []
    for _ in range(4):
        plan = plan_interval(positions, available, max_per_partition=100)
        read.extend(plan.ranges)
        positions = plan.positions
    assert [str(r) for r in read] == [
        "a-0 [0, 100)",
        "a-1 [5, 40)",
        "a-0 [100, 200)",
        "a-0 [200, 250)",
    ]
    assert positions == {A0: 250, A1: 40}


def test_a_new_partition_is_read_from_its_earliest_offset() -> None:
    plan = plan_interval({A0: 7}, {A0: (0, 7), A1: (3, 9)})
    assert plan.ranges == [OffsetRange("a", 1, 3, 9)]
    assert plan.positions == {A0: 7, A1: 9}
    assert "a-1: new partition" in plan.notes[0]


def test_a_partition_without_an_answer_keeps_its_position() -> None:
    plan = plan_interval({A0: 7, A1: 2}, {A1: (0, 5)})
    assert plan.ranges == [OffsetRange("a", 1, 2, 5)]
    assert plan.positions == {A0: 7, A1: 5}
    assert plan.notes == ["a-0: no offsets from Kafka this interval; kept at 7"]


def test_offsets_deleted_by_retention_fail_with_the_offsets_and_the_choices() -> None:
    with pytest.raises(KafkaDataLossError) as err:
        plan_interval({A0: 100}, {A0: (150, 400)})
    message = str(err.value)
    assert "Kafka a-0: the stream's next offset 100 is no longer in the log" in message
    assert "offsets 100-149 were deleted, by retention" in message
    assert "failOnDataLoss=False" in message
    assert "fromOffsets" in message
    assert "retention.ms" in message


def test_failOnDataLoss_false_skips_what_retention_deleted() -> None:
    plan = plan_interval({A0: 100}, {A0: (150, 400)}, fail_on_data_loss=False)
    assert plan.ranges == [OffsetRange("a", 0, 150, 400)]
    assert plan.positions == {A0: 400}
    assert "Skipped to 150" in plan.notes[0]


def test_a_position_past_the_log_end_is_data_loss_too() -> None:
    with pytest.raises(KafkaDataLossError, match=r"a-0: the stream's next offset 90 is past"):
        plan_interval({A0: 90}, {A0: (0, 12)})
    plan = plan_interval({A0: 90}, {A0: (0, 12)}, fail_on_data_loss=False)
    assert plan.ranges == []
    assert plan.positions == {A0: 12}


def test_a_deleted_topic_fails_naming_it_or_is_dropped() -> None:
    with pytest.raises(KafkaTopicDeletedError) as err:
        plan_interval({A0: 4, A1: 6, B0: 1}, {B0: (0, 3)}, {"a"})
    assert "Kafka topic 'a' no longer exists" in str(err.value)
    assert "{0: 4, 1: 6}" in str(err.value)
    assert "remove it from topics" in str(err.value)
    plan = plan_interval({A0: 4, A1: 6, B0: 1}, {B0: (0, 3)}, {"a"}, fail_on_data_loss=False)
    assert plan.ranges == [OffsetRange("b", 0, 1, 3)]
    assert plan.positions == {B0: 3}


# ---- split_ranges ---------------------------------------------------------------------------
def test_one_task_per_range_unless_a_range_is_big() -> None:
    ranges = [OffsetRange("a", 0, 0, 50), OffsetRange("a", 1, 0, 0), OffsetRange("b", 0, 5, 9)]
    assert split_ranges(ranges, max_per_task=100) == [ranges[0], ranges[2]]
    pieces = split_ranges([OffsetRange("a", 0, 0, 250)], max_per_task=100)
    assert [str(p) for p in pieces] == ["a-0 [0, 83)", "a-0 [83, 166)", "a-0 [166, 250)"]


def test_few_big_ranges_are_split_to_use_every_core_but_small_ones_are_not() -> None:
    big = [OffsetRange("a", 0, 0, 100_000), OffsetRange("a", 1, 0, 30_000)]
    pieces = split_ranges(big, min_tasks=4, min_split=10_000)
    assert [p.count for p in pieces] == [33_333, 33_333, 33_334, 30_000]
    small = [OffsetRange("a", 0, 0, 15_000)]
    assert split_ranges(small, min_tasks=4, min_split=10_000) == small


@given(
    st.lists(st.integers(min_value=0, max_value=5000), min_size=1, max_size=6),
    st.one_of(st.none(), st.integers(min_value=1, max_value=700)),
    st.integers(min_value=1, max_value=12),
    st.integers(min_value=1, max_value=900),
)
def test_pieces_cover_every_range_exactly_in_order(
    sizes: list[int], max_per_task: int | None, min_tasks: int, min_split: int
) -> None:
    ranges = [OffsetRange("t", p, 1000 * p, 1000 * p + n) for p, n in enumerate(sizes)]
    pieces = split_ranges(
        ranges, max_per_task=max_per_task, min_tasks=min_tasks, min_split=min_split
    )
    for r in ranges:
        mine = [p for p in pieces if p.partition == r.partition]
        assert all(p.count > 0 for p in mine)
        assert [p.fromOffset for p in mine[1:]] == [p.untilOffset for p in mine[:-1]]
        if r.count:
            assert (mine[0].fromOffset, mine[-1].untilOffset) == (r.fromOffset, r.untilOffset)
            if max_per_task is not None:
                assert all(p.count <= max_per_task for p in mine)
            assert max(p.count for p in mine) - min(p.count for p in mine) <= 1
        else:
            assert mine == []


# ---- where a stream starts -----------------------------------------------------------------
def test_auto_offset_reset_names_both_generations_of_the_setting() -> None:
    assert parse_offset_reset({}) == "latest"
    assert parse_offset_reset({"auto.offset.reset": "smallest"}) == "earliest"
    assert parse_offset_reset({"auto.offset.reset": "LATEST"}) == "latest"
    with pytest.raises(ValueError, match=r"'auto.offset.reset' 'none' must be 'earliest' or"):
        parse_offset_reset({"auto.offset.reset": "none"})


def test_from_offsets_take_pyspark_and_tuple_keys() -> None:
    class Confluent:  # confluent_kafka.TopicPartition's shape
        topic, partition = "b", 0

    got = normalize_from_offsets(
        {TopicAndPartition("a", 0): 5, ("a", 1): LATEST, Confluent(): EARLIEST}, ["a", "b"]
    )
    assert got == {A0: 5, A1: LATEST, B0: EARLIEST}
    with pytest.raises(ValueError, match=r"names topic 'c', which is not among the topics read"):
        normalize_from_offsets({("c", 0): 1}, ["a"])
    with pytest.raises(ValueError, match=r"fromOffsets\[a-0\] -7 must be an offset >= 0"):
        normalize_from_offsets({("a", 0): -7}, ["a"])
    with pytest.raises(TypeError, match="fromOffsets must be a dict"):
        normalize_from_offsets([("a", 0)], ["a"])


def test_starting_positions_follow_from_offsets_then_the_default() -> None:
    available = {A0: (5, 50), A1: (0, 9), B0: (2, 2)}
    got = starting_positions(available, {A0: 20, A1: EARLIEST}, "latest")
    assert got == {A0: 20, A1: 0, B0: 2}
    assert starting_positions(available, {}, "earliest") == {A0: 5, A1: 0, B0: 2}
    with pytest.raises(KafkaDataLossError, match=r"fromOffsets\[a-0\] 3 is outside .* \[5, 50\]"):
        starting_positions(available, {A0: 3}, "latest")
    with pytest.raises(ValueError, match="fromOffsets names partitions that do not exist: a-7"):
        starting_positions(available, {("a", 7): 0}, "latest")


# ---- client settings -------------------------------------------------------------------------
def test_kafka_params_are_checked_and_translated() -> None:
    got = validate_params({"metadata.broker.list": "h:1"}, "kafkaParams")
    assert got == {"bootstrap.servers": "h:1"}
    with pytest.raises(ValueError, match=r"kafkaParams needs 'bootstrap\.servers'"):
        validate_params({}, "kafkaParams")
    with pytest.raises(ValueError, match=r"'value\.deserializer' is a setting of Kafka's Java"):
        validate_params({"bootstrap.servers": "h:1", "value.deserializer": "x"}, "kafkaParams")
    with pytest.raises(TypeError, match="kafkaParams must be a dict"):
        validate_params("h:1", "kafkaParams")


def test_a_task_consumer_never_commits_or_resets_silently() -> None:
    settings = consumer_settings(
        {"bootstrap.servers": "h:1", "group.id": "g", "auto.offset.reset": "latest"}
    )
    assert settings["group.id"] == "g"
    assert settings["enable.auto.commit"] is False
    assert settings["auto.offset.reset"] == "error"
    assert settings["enable.partition.eof"] is True


def test_a_task_consumer_fetches_again_soon_and_the_user_may_say_otherwise() -> None:
    assert consumer_settings({"bootstrap.servers": "h:1"})["fetch.queue.backoff.ms"] == 10
    mine = consumer_settings({"bootstrap.servers": "h:1", "fetch.queue.backoff.ms": 200})
    assert mine["fetch.queue.backoff.ms"] == 200


def test_a_missing_client_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "confluent_kafka", None)
    with pytest.raises(KafkaClientMissingError, match=r"pip install 'pyspark-dstream\[kafka\]'"):
        require_client()


# ---- the sink's record format -----------------------------------------------------------------
def test_records_are_key_value_pairs_or_plain_values() -> None:
    assert default_serializer(("k", b"v")) == (b"k", b"v")
    assert default_serializer("line") == (None, b"line")
    assert default_serializer((None, "v")) == (None, b"v")
    with pytest.raises(TypeError, match="pass serializer=lambda record"):
        default_serializer(3.5)


def test_record_identity_reads_the_headers_saveToKafka_writes() -> None:
    headers = [
        ("other", b"x"),
        ("dstream.output", b"out"),
        ("dstream.batch_ms", b"3000"),
        ("dstream.partition", b"2"),
        ("dstream.record", b"0f1e-1"),
    ]
    assert record_identity(headers) == ("out", 3000, 2, "0f1e-1")
    with pytest.raises(ValueError, match=r"not written by dstream\.kafka\.saveToKafka"):
        record_identity([("other", b"x")])


def test_an_interval_cut_at_its_time_ends_at_the_first_later_record() -> None:
    """cutRangesAt="time": the log end is lowered to the first offset timestamped after the
    interval; never below what earlier intervals read, nothing changed where no record is
    that new (-1), or Kafka did not answer (absent)."""
    available = {("t", 0): (0, 100), ("t", 1): (10, 50), ("t", 2): (0, 30), ("t", 3): (0, 9)}
    positions = {("t", 0): 20, ("t", 1): 40, ("t", 2): 5}
    after = {("t", 0): 60, ("t", 1): 30, ("t", 2): -1}
    assert cut_at_time(available, positions, after) == {
        ("t", 0): (0, 60),  # records 60.. are newer than the interval: the next one reads them
        ("t", 1): (10, 40),  # the first newer record was already read: nothing more this time
        ("t", 2): (0, 30),  # no record is newer: all of it
        ("t", 3): (0, 9),  # no answer by time: the log end
    }
    plan = plan_interval(positions, cut_at_time(available, positions, after))
    assert [(r.partition, r.fromOffset, r.untilOffset) for r in plan.ranges] == [
        (0, 20, 60), (2, 5, 30), (3, 0, 9),
    ]  # fmt: skip
