"""One malformed record in a stateful program: under bad_records="fail" (the default, as
pyspark.streaming) its interval fails and, since the state of every later interval depends
on it, so does every later one, with an error that says how to switch; under "quarantine"
the record is set aside with its error, interval and operator, every interval commits, the
state equals the oracle without the record, and the set-aside records are counted once in
the progress records and written to the checkpoint directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dstream import StreamingJobError, StreamingSettings, Time, read_quarantined
from dstream.scheduler.engine import engine_of

from .conftest import Harness

B = 1000
LINES = [
    ["a 1", "b 2"],
    ["a 3", "b not-a-number", "c 1"],  # the bad record, in interval 2
    ["a 1", "c 2"],
    ["b 5"],
]


def parse(line: str) -> tuple[str, int]:
    key, value = line.split(" ")
    return key, int(value)


def totals_without_bad(upto: int) -> dict[str, int]:
    totals: dict[str, int] = {}
    for batch in LINES[:upto]:
        for line in batch:
            try:
                key, value = parse(line)
            except ValueError:
                continue
            totals[key] = totals.get(key, 0) + value
    return totals


def program(h: Harness) -> tuple[dict[int, dict[str, int]], dict[int, dict[str, int]]]:
    """Running totals by updateStateByKey and by track(), each interval's collected on the
    driver; the parsed stream is read by both (and computed twice: it is not cached)."""
    sc = h.ssc.sparkContext
    lines = h.ssc.queueStream([sc.parallelize(b, 2) for b in LINES])
    pairs = lines.map(parse)
    totals = pairs.updateStateByKey(lambda new, old: sum(new) + (old or 0), numPartitions=2)
    tracked = pairs.track(lambda k, v: v, lambda k, s, v: s + v, 60, numPartitions=2)
    by_update: dict[int, dict[str, int]] = {}
    by_track: dict[int, dict[str, int]] = {}
    totals.foreachRDD(lambda t, rdd: by_update.__setitem__(t.ms, dict(rdd.collect())))
    tracked.foreachRDD(lambda t, rdd: by_track.__setitem__(t.ms, dict(rdd.collect())))
    return by_update, by_track


def test_by_default_a_bad_record_fails_its_interval_and_says_how_to_set_it_aside(
    harness: Any,
) -> None:
    h: Harness = harness(settings=StreamingSettings(output_retries=0))
    by_update, _ = program(h)
    h.ssc.start()
    h.run_batches(3)
    assert by_update[1 * B] == totals_without_bad(1)
    assert 2 * B not in by_update and 3 * B not in by_update  # the state is poisoned on
    with pytest.raises(StreamingJobError) as info:
        h.ssc.awaitTerminationOrTimeout(0)
    message = str(info.value)
    assert "map at test_bad_records.py" in message
    assert "ValueError: invalid literal for int() with base 10: 'not-a-number'" in message
    assert "StreamingSettings(bad_records='quarantine')" in message
    with pytest.raises(ValueError, match=r"quarantined\(\): this program runs with bad_records"):
        h.ssc.quarantined()


def test_under_quarantine_a_bad_record_is_set_aside_and_every_interval_commits(
    harness: Any, tmp_path: Path
) -> None:
    ckpt = tmp_path / "ckpt"
    h: Harness = harness(settings=StreamingSettings(bad_records="quarantine"))
    h.ssc.checkpoint(str(ckpt))
    by_update, by_track = program(h)
    h.ssc.start()
    h.run_batches(4)
    for n in range(1, 5):
        assert by_update[n * B] == totals_without_bad(n), n
        assert by_track[n * B] == totals_without_bad(n), n
    (record,) = h.ssc.quarantined()
    assert record.time == Time(2 * B) and record.operator.startswith("map at test_bad_records.py")
    assert record.record == "'b not-a-number'" and record.position == 0  # 2nd partition's first
    assert record.error == "ValueError: invalid literal for int() with base 10: 'not-a-number'"
    engine_of(h.ssc).bus.wait_until_empty(60)  # progress records are made on its thread
    counts = {p["batchId"]: p["quarantinedRecords"] for p in h.ssc.recentProgress}
    assert counts == {1 * B: 0, 2 * B: 1, 3 * B: 0, 4 * B: 0}  # read twice, counted once
    assert h.ssc.quarantined(since=Time(3 * B)) == []
    # The dead-letter output: one file for the interval, readable after the driver is gone.
    body = json.loads((ckpt / "quarantine" / f"{2 * B}.json").read_text())
    assert body["count"] == 1 and len(body["slots"]) == 1
    assert read_quarantined(str(ckpt)) == [record]


def test_under_quarantine_a_state_function_that_raises_keeps_the_keys_state(
    harness: Any,
) -> None:
    """updateStateByKey's and track()'s functions: the key keeps its state, (key, new
    values) / (key, event) is set aside."""

    def update(new: list[int], old: int | None) -> int:
        if 13 in new:
            raise ArithmeticError("13 is not allowed")
        return sum(new) + (old or 0)

    def grow(key: str, state: int, value: int) -> int:
        if value == 13:
            raise ArithmeticError("13 is not allowed")
        return state + value

    h: Harness = harness(settings=StreamingSettings(bad_records="quarantine"))
    sc = h.ssc.sparkContext
    batches = [[("a", 1), ("b", 1)], [("a", 13), ("b", 2)], [("a", 4)]]
    pairs = h.ssc.queueStream([sc.parallelize(b, 2) for b in batches])
    totals = pairs.updateStateByKey(update, numPartitions=2)
    tracked = pairs.track(lambda k, v: v, grow, 60, numPartitions=2)
    seen: dict[str, dict[int, dict[str, int]]] = {"update": {}, "track": {}}
    totals.foreachRDD(lambda t, rdd: seen["update"].__setitem__(t.ms, dict(rdd.collect())))
    tracked.foreachRDD(lambda t, rdd: seen["track"].__setitem__(t.ms, dict(rdd.collect())))
    h.ssc.start()
    h.run_batches(3)
    for kind in ("update", "track"):
        assert seen[kind][2 * B] == {"a": 1, "b": 3}, kind  # a kept its state through 2 s
        assert seen[kind][3 * B] == {"a": 5, "b": 3}, kind
    records = sorted(h.ssc.quarantined(), key=lambda r: r.operator)
    assert [(r.time, r.operator.split(" ")[0], r.record) for r in records] == [
        (Time(2 * B), "track", "('a', 13)"),
        (Time(2 * B), "updateStateByKey", "('a', [13])"),
    ]
    assert all(r.error == "ArithmeticError: 13 is not allowed" for r in records)
