"""Per-partition state merges (window with inverse, updateStateByKey) on sectioned input."""

from __future__ import annotations

import operator
from typing import Any

import pytest

from dstream.tasks.state_merge import (
    SectionMark,
    WindowPartition,
    combine_locally,
    fold_window,
    merge_update_state,
    pack_partial,
    sections,
    unpack_partial,
    window_items,
)

MARK = (0, SectionMark())


def test_sections_split_on_marks() -> None:
    records = [("a", 1), MARK, ("b", 2), ("c", 3), MARK]
    assert sections(records, 3) == [[("a", 1)], [("b", 2), ("c", 3)], []]


def fold(state: Any, times: list[int], *pairs_of_times: list[Any], keep_after: int) -> Any:
    """One fold over a sectioned partition: the state section, then one per time."""
    records: list[Any] = [] if state is None else [(None, state)]
    for pairs in pairs_of_times:
        records += [MARK, *pairs]
    (out,) = fold_window(records, operator.add, operator.sub, times, keep_after)
    assert out[0] is None and isinstance(out[1], WindowPartition)
    return out[1]


def test_a_fold_reduces_each_interval_and_counts_the_intervals_a_key_is_in() -> None:
    state = fold(None, [1, 2], [("a", 1), ("a", 2), ("b", 3)], [("a", 4)], keep_after=0)
    assert state.totals == {"a": [7, 2], "b": [3, 1]}
    assert [t for t, _ in state.ring] == [1, 2]
    assert dict(window_items((None, state))) == {"a": 7, "b": 3}


def test_intervals_leave_once_they_are_not_after_keep_after() -> None:
    state = fold(None, [1, 2, 3], [("a", 1), ("c", 0)], [("a", 2), ("b", 5)], [], keep_after=0)
    assert [t for t, _ in state.ring] == [1, 2]  # an interval without records takes no slot
    state = fold(state, [4], [("b", 1)], keep_after=1)  # interval 1 leaves: a -1, c gone
    assert state.totals == {"a": [2, 1], "b": [6, 2]}  # c dropped though its value was 0
    state = fold(state, [5], [], keep_after=3)  # 2 and 3 leave
    assert state.totals == {"b": [1, 1]} and [t for t, _ in state.ring] == [4]  # 5: empty


def test_an_interval_folded_after_keep_after_leaves_at_once() -> None:
    state = fold(None, [1, 2], [("a", 1)], [("a", 10)], keep_after=1)
    assert state.totals == {"a": [10, 1]} and [t for t, _ in state.ring] == [2]


def test_a_state_survives_pickling_with_its_ring() -> None:
    import pickle

    state = fold(None, [1, 2], [("a", 1)], [("b", 2)], keep_after=0)
    again = pickle.loads(pickle.dumps(state))
    assert again.totals == state.totals and again.ring == state.ring
    later = fold(again, [3], [], keep_after=2)
    assert later.totals == {} and later.ring == [] and later.last_ms == 3


def test_ring_entries_are_compressed_and_read_back() -> None:
    import pickle

    partial = {f"word{i:05d}": i for i in range(2000)}
    entry = pack_partial(partial)
    assert unpack_partial(entry) == partial
    assert len(entry) < len(pickle.dumps(partial, pickle.HIGHEST_PROTOCOL)) / 2
    state = fold(None, [1], [("a", 1), ("b", 2)], keep_after=0)
    assert unpack_partial(state.ring[0][1]) == {"a": 1, "b": 2}


def test_a_ring_of_bare_pickles_from_an_older_checkpoint_still_leaves_the_window() -> None:
    import pickle

    bare = [
        (t, pickle.dumps(p, pickle.HIGHEST_PROTOCOL)) for t, p in [(1, {"a": 1}), (2, {"a": 2})]
    ]
    state = WindowPartition({"a": [3, 2]}, bare, 2)
    state = fold(state, [3], [("b", 1)], keep_after=1)
    assert state.totals == {"a": [2, 1], "b": [1, 1]}
    state = fold(state, [4], [], keep_after=2)
    assert state.totals == {"b": [1, 1]} and [t for t, _ in state.ring] == [3]


def test_an_interval_out_of_order_is_an_error() -> None:
    state = fold(None, [5], [("a", 1)], keep_after=0)
    with pytest.raises(ValueError, match="interval 4 ms folded after interval 5 ms"):
        fold(state, [4], [("a", 1)], keep_after=0)


def test_combine_locally_reduces_within_a_partition() -> None:
    assert dict(combine_locally([("a", 1), ("b", 2), ("a", 3)], operator.add)) == {"a": 4, "b": 2}


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


def test_a_fold_can_start_from_a_saved_state_instead_of_its_first_section() -> None:
    saved = fold(None, [1], [("a", 1)], keep_after=0)
    records = [MARK, ("a", 2)]  # no state section: the state comes from the checkpoint
    ((_, state),) = fold_window(records, operator.add, operator.sub, [2], 0, [(None, saved)])
    assert state.totals == {"a": [3, 2]}


def test_a_window_state_regrouped_by_key_folds_on_as_if_never_split() -> None:
    """A rescale splits two window partitions into three by key: each new partition holds
    its keys' totals and their partials in every interval of the ring, so later folds and
    evictions give what the unsplit state gives."""
    from dstream.tasks.state_merge import WindowPartition, regroup_window

    intervals = [
        [("a", 1), ("b", 2), ("c", 3)],
        [("a", 4), ("d", 5)],
        [("b", 6), ("c", 7), ("e", 8)],
    ]
    old = [WindowPartition(), WindowPartition()]
    whole = WindowPartition()
    for i, pairs in enumerate(intervals, start=1):
        whole.add(i * 1000, pairs, operator.add)
        for j, part in enumerate(old):
            part.add(i * 1000, [kv for kv in pairs if ord(kv[0]) % 2 == j], operator.add)
    new = [regroup_window(old, lambda k, i=i: ord(k) % 3 == i) for i in range(3)]
    assert sorted(k for part in new for k in part.totals) == sorted(whole.totals)
    assert all(part.last_ms == 3000 for part in new)
    # Fold one more interval and evict the first two, in both shapes.
    more = [("a", 10), ("e", 1), ("f", 2)]
    whole.add(4000, more, operator.add)
    whole.evict(2000, operator.sub)
    for i, part in enumerate(new):
        part.add(4000, [kv for kv in more if ord(kv[0]) % 3 == i], operator.add)
        part.evict(2000, operator.sub)
    merged = {k: v for part in new for k, v in part.totals.items()}
    assert merged == whole.totals
    assert merged == {"b": [6, 1], "c": [7, 1], "e": [9, 2], "a": [10, 1], "f": [2, 1]}
