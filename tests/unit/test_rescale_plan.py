"""The partition-count schedule of an elastic state and the narrow plans that move a hash
partitioned state between counts without a shuffle. Pure logic, no Spark."""

from __future__ import annotations

import pickle
import random

import pytest

from dstream.streams.rescale import PartitionSchedule, keeps_whole_parents, narrow_plan


def test_each_interval_has_the_count_of_the_last_step_at_or_before_it() -> None:
    s = PartitionSchedule(4)
    assert [s.at(ms) for ms in (0, 1000, 99_000)] == [4, 4, 4]
    s.add(5000, 8)
    s.add(9000, 4)
    assert [s.at(ms) for ms in (4000, 5000, 8000, 9000, 20_000)] == [4, 8, 8, 4, 4]
    assert s.latest == 4
    assert s.steps() == [(0, 4), (5000, 8), (9000, 4)]


def test_a_later_rescale_at_the_same_interval_replaces_the_pending_one() -> None:
    s = PartitionSchedule(4)
    s.add(5000, 8)
    s.add(5000, 16)
    assert s.steps() == [(0, 4), (5000, 16)]
    s.add(6000, 16)  # no change: no step
    assert s.steps() == [(0, 4), (5000, 16)]
    with pytest.raises(ValueError, match="rescales take effect in order"):
        s.add(4000, 2)


def test_a_restarted_program_s_own_count_drops_steps_that_never_took_effect() -> None:
    s = PartitionSchedule(4)
    s.add(5000, 8)
    s.add(9000, 2)  # scheduled; the driver died before interval 9 ran
    s.restart_with(8000, 6)
    assert s.steps() == [(0, 4), (5000, 8), (8000, 6)]
    s = PartitionSchedule(4)
    s.add(5000, 8)
    s.restart_with(8000, 8)  # the count it already has: no step
    assert s.steps() == [(0, 4), (5000, 8)]


def test_the_schedule_travels_with_the_pickled_graph_and_restores_from_the_journal() -> None:
    s = PartitionSchedule(4)
    s.add(5000, 8)
    copy = pickle.loads(pickle.dumps(s))
    assert copy.steps() == s.steps()
    copy.replace([[0, 4], [5000, 8], [7000, 2]])
    assert copy.at(7000) == 2


@pytest.mark.parametrize(("old", "new"), [(4, 8), (8, 4), (3, 6), (6, 3), (4, 6), (1, 2)])
def test_a_narrow_plan_reads_every_old_partition_a_key_can_come_from(old: int, new: int) -> None:
    plan = narrow_plan(old, new)
    assert plan is not None and len(plan) == new
    assert all(len(parents) <= 2 for parents in plan)
    rng = random.Random(1)
    for _ in range(2000):
        h = rng.randrange(-(2**62), 2**62)
        assert h % old in plan[h % new], (h, old, new)
    if new == 2 * old:
        assert plan == [[i % old] for i in range(new)]  # split: one parent each
    if old == 2 * new:
        assert plan == [[i, i + new] for i in range(new)]  # merge: two parents each


@pytest.mark.parametrize(("old", "new"), [(4, 8), (8, 4), (3, 6), (6, 3), (4, 6), (1, 2), (4, 2)])
def test_a_merge_keeps_every_key_of_the_partitions_it_reads_and_a_split_does_not(
    old: int, new: int
) -> None:
    """Where keeps_whole_parents says so, the state's merge hashes no key again (the 8 -> 4
    rescale interval runs the same merge as an interval that did not rescale)."""
    plan = narrow_plan(old, new)
    assert plan is not None
    rng = random.Random(2)
    hashes = [rng.randrange(-(2**62), 2**62) for _ in range(4000)]
    stray = any(
        h % new != i for i, parents in enumerate(plan) for h in hashes if h % old in parents
    )
    assert keeps_whole_parents(old, new) is not stray, (old, new)


@pytest.mark.parametrize(("old", "new"), [(4, 9), (8, 3), (6, 1), (6, 4)])
def test_no_narrow_plan_where_a_shuffle_moves_less(old: int, new: int) -> None:
    assert narrow_plan(old, new) is None


def test_what_rescale_and_the_docs_say_moves_narrowly_is_what_does() -> None:
    """rescale()'s docstring and docs/recovery.md name counts that move without a shuffle
    and counts that shuffle (issue #61: the docstring said every count but doubling and
    halving shuffles, while 4 -> 6 is narrow)."""
    import re
    from pathlib import Path

    from dstream.api.common import CommonOps

    docs = (Path(__file__).resolve().parents[2] / "docs" / "recovery.md").read_text()
    bullet = docs.split("**Narrow where hashing allows**", 1)[1].split("- **", 1)[0]
    pairs = re.compile(r"(\d+) -> (\d+)")
    for where in (CommonOps.rescale.__doc__ or "", bullet):
        text = " ".join(where.split())
        narrow = text.split("at most two", 1)[1].split("without a shuffle", 1)[0]
        shuffled = re.split("[Oo]ther counts", text, maxsplit=1)[1].split("shuffle", 1)[0]
        narrow_pairs, shuffled_pairs = pairs.findall(narrow), pairs.findall(shuffled)
        assert ("4", "6") in narrow_pairs and shuffled_pairs, text
        for a, b in narrow_pairs:
            assert narrow_plan(int(a), int(b)) is not None, (a, b)
        for a, b in shuffled_pairs:
            assert narrow_plan(int(a), int(b)) is None, (a, b)
