"""Per-partition state merges (window with inverse, updateStateByKey) on sectioned input."""

from __future__ import annotations

import operator
from typing import Any

import pytest

from dstream.operators.state_logic import SectionMark, merge_update_state, merge_window, sections

MARK = (0, SectionMark())


def test_sections_split_on_marks() -> None:
    records = [("a", 1), MARK, ("b", 2), ("c", 3), MARK]
    assert sections(records, 3) == [[("a", 1)], [("b", 2), ("c", 3)], []]


def test_window_state_adds_entering_subtracts_leaving_and_counts_contributions() -> None:
    state = [("a", (5, 2)), ("b", (1, 1)), ("c", (0, 1))]
    enter = [("a", 1), ("d", 4)]
    leave = [("b", 1), ("c", 0)]
    out = dict(merge_window([*state, MARK, *enter, MARK, *leave], operator.add, operator.sub))
    # b and c have no contribution left: dropped although c's value was already 0.
    assert out == {"a": (6, 3), "d": (4, 1)}


def test_window_state_without_previous_state_reduces_the_whole_window() -> None:
    enter = [("a", 1), ("a", 2), ("b", 3)]
    out = dict(merge_window([MARK, *enter, MARK], operator.add, None))
    assert out == {"a": (3, 2), "b": (3, 1)}


def test_a_leaving_key_without_state_is_an_error() -> None:
    with pytest.raises(ValueError, match="no value for key 'x' whose contribution leaves"):
        list(merge_window([MARK, MARK, ("x", 1)], operator.add, operator.sub))


def test_update_state_gets_values_in_input_order_and_can_drop_keys() -> None:
    def update(values: list[str], old: Any) -> Any:
        joined = (old or "") + "".join(values)
        return None if joined.endswith("!") else joined

    state = [("k", "x"), ("gone", "y"), ("idle", "z")]
    new = [
        ("k", ((1, 0), "c")),
        ("k", ((0, 1), "b")),
        ("k", ((0, 0), "a")),
        ("gone", ((0, 2), "!")),
    ]
    assert dict(merge_update_state([*state, MARK, *new], update)) == {"k": "xabc", "idle": "z"}
