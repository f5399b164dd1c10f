"""Setting bad records aside inside tasks (dstream.tasks.bad_record_notes): pure logic, no Spark."""

from __future__ import annotations

from typing import Any

import pytest

from dstream.tasks.bad_record_notes import (
    MAX_SAMPLES,
    Noted,
    QuarantineParam,
    Slot,
    StateNotes,
    quarantining,
)
from dstream.tasks.state_merge import SectionMark, merge_update_state


class FakeAccumulator:
    """What a task's accumulator does: merge each update with the param's algebra."""

    def __init__(self) -> None:
        self.param = QuarantineParam()
        self.value: dict[Slot, Noted] = {}

    def add(self, term: dict[Slot, Noted]) -> None:
        self.value = self.param.addInPlace(self.value, term)


def run(kind: str, fn: Any, records: list[Any], split: int = 3) -> tuple[list[Any], Any]:
    acc = FakeAccumulator()
    out = list(quarantining(kind, fn, "op at app.py:1", 5000, acc)(split, iter(records)))
    return out, acc.value


def parse(text: str) -> int:
    return int(text)


@pytest.mark.parametrize(
    ("kind", "fn", "records", "expected"),
    [
        ("map", parse, ["1", "x", "3"], [1, 3]),
        ("filter", lambda s: int(s) > 1, ["1", "x", "3"], ["3"]),
        ("flatMap", lambda s: [int(c) for c in s], ["12", "3x", "4"], [1, 2, 4]),
        ("mapValues", parse, [("a", "1"), ("b", "x")], [("a", 1)]),
        ("flatMapValues", lambda s: [int(c) for c in s], [("a", "12"), ("b", "1x")], [("a", 1), ("a", 2)]),
    ],
)  # fmt: skip
def test_a_record_the_function_raises_on_is_set_aside_and_the_rest_go_on(
    kind: str, fn: Any, records: list[Any], expected: list[Any]
) -> None:
    out, noted = run(kind, fn, records)
    assert out == expected
    ((slot, note),) = noted.items()
    assert slot == Slot(5000, "op at app.py:1", 3)
    assert note.total == 1
    ((position, text, error),) = note.samples
    assert position == 1 and "x" in text and error.startswith("ValueError: invalid literal")


def test_a_flat_map_that_fails_half_way_emits_nothing_of_that_record() -> None:
    def half(s: str) -> Any:
        yield 1
        raise KeyError(s)

    out, noted = run("flatMap", half, ["a"])
    assert out == [] and noted[Slot(5000, "op at app.py:1", 3)].total == 1


def test_a_partition_with_no_bad_record_sends_nothing() -> None:
    out, noted = run("map", parse, ["1", "2"])
    assert out == [1, 2] and noted == {}


def test_only_the_first_samples_are_kept_but_all_are_counted() -> None:
    _, noted = run("map", parse, ["x"] * (MAX_SAMPLES + 5))
    (note,) = noted.values()
    assert note.total == MAX_SAMPLES + 5 and len(note.samples) == MAX_SAMPLES


def test_long_records_and_errors_are_cut() -> None:
    _, noted = run("map", parse, ["y" * 2000])
    ((_, text, error),) = next(iter(noted.values())).samples
    assert len(text) == 500 and text.endswith("...") and len(error) <= 500


def test_a_partition_computed_twice_counts_once_and_a_whole_pass_beats_a_prefix() -> None:
    param = QuarantineParam()
    slot = Slot(1000, "map at a.py:1", 0)
    whole = Noted(2, ((0, "'x'", "E"), (4, "'y'", "E")))
    prefix = Noted(1, ((0, "'x'", "E"),))
    value = param.addInPlace({}, {slot: prefix})
    value = param.addInPlace(value, {slot: whole})
    value = param.addInPlace(value, {slot: whole})  # a recomputation, a speculative copy
    value = param.addInPlace(value, {slot: prefix})
    assert value == {slot: whole}


def test_a_state_update_that_raises_keeps_the_keys_state_and_sets_aside_its_values() -> None:
    def update(values: list[int], state: int | None) -> int:
        if 13 in values:
            raise ValueError("unlucky")
        return sum(values) + (state or 0)

    acc = FakeAccumulator()
    notes = StateNotes(acc, "updateStateByKey at a.py:2", 1)
    mark = (None, SectionMark())
    records = [
        ("a", 10), ("b", 20), mark,  # the state before
        ("a", ((0, 0), 1)), ("b", ((0, 1), 13)), mark,  # interval 1 s: b's update raises
        ("b", ((0, 0), 2)), ("c", ((0, 1), 13)),  # interval 2 s: c is new and raises
    ]  # fmt: skip
    state = dict(merge_update_state(records, update, 2, None, (notes, [1000, 2000])))
    assert state == {"a": 11, "b": 22}  # b kept 20 through 1 s, then took 2; c never started
    assert {s.time_ms: n.total for s, n in acc.value.items()} == {1000: 1, 2000: 1}
    first = acc.value[Slot(1000, "updateStateByKey at a.py:2", 1)].samples[0]
    assert first[1] == "('b', [13])" and first[2] == "ValueError: unlucky"


def test_without_quarantine_a_state_update_that_raises_fails_the_task() -> None:
    def update(values: list[int], state: int | None) -> int:
        raise ValueError("unlucky")

    records = [(None, SectionMark()), ("a", ((0, 0), 1))]
    with pytest.raises(ValueError, match="unlucky"):
        merge_update_state(records, update, 1)
