"""Windowed operators and keyed state against brute-force oracles that recompute every
window from the raw batches (with and without inverse functions), and a few pinned cases."""

from __future__ import annotations

import operator
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dstream.testing.streams import BatchCollector, normalize, run_operation

from .conftest import Harness

B = 1000  # batch interval, ms


def window_batches(batches: list[list[Any]], end_ms: int, window_ms: int) -> list[Any]:
    """The records of the batches whose intervals lie in [end - window, end)."""
    out: list[Any] = []
    for i, batch in enumerate(batches, start=1):
        if end_ms - window_ms < i * B <= end_ms:
            out.extend(batch)
    return out


def reduce_by_key(records: list[tuple[Any, int]]) -> list[tuple[Any, int]]:
    acc: dict[Any, int] = {}
    for k, v in records:
        acc[k] = acc.get(k, 0) + v
    return sorted(acc.items())


PAIRS = st.lists(
    st.lists(st.tuples(st.sampled_from("abcd"), st.integers(-3, 5)), max_size=5),
    min_size=3,
    max_size=7,
)


@settings(
    max_examples=5,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(batches=PAIRS, wk=st.integers(1, 4), sk=st.integers(1, 2))
def test_every_window_operator_equals_the_brute_force_oracle(
    harness: Any, batches: list[list[tuple[str, int]]], wk: int, sk: int
) -> None:
    w, s = wk * B, sk * B
    h: Harness = harness()
    pairs = h.ssc.queueStream([h.ssc.sparkContext.parallelize(b, 2) for b in batches])
    values = pairs.map(lambda kv: kv[1])
    outs = {
        "window": BatchCollector(pairs.window(w / 1000, s / 1000)),
        "reduceByWindow": BatchCollector(
            values.reduceByWindow(operator.add, None, w / 1000, s / 1000)
        ),
        "reduceByWindow-inv": BatchCollector(
            values.reduceByWindow(operator.add, operator.sub, w / 1000, s / 1000)
        ),
        "rbkw": BatchCollector(pairs.reduceByKeyAndWindow(operator.add, None, w / 1000, s / 1000)),
        "rbkw-inv": BatchCollector(
            pairs.reduceByKeyAndWindow(operator.add, operator.sub, w / 1000, s / 1000, 3)
        ),
        "countByWindow": BatchCollector(pairs.countByWindow(w / 1000, s / 1000)),
        "countByValueAndWindow": BatchCollector(
            pairs.keys().countByValueAndWindow(w / 1000, s / 1000)
        )
        if hasattr(pairs, "keys")
        else BatchCollector(pairs.map(lambda kv: kv[0]).countByValueAndWindow(w / 1000, s / 1000)),
        "groupByKeyAndWindow": BatchCollector(
            pairs.groupByKeyAndWindow(w / 1000, s / 1000).mapValues(sorted)
        ),
    }
    h.ssc.start()
    h.run_batches(len(batches))
    for name, collector in outs.items():
        got = {t.ms: normalize(r) for t, r in collector.batches.items()}
        ends = [k * s for k in range(1, len(batches) * B // s + 1)]
        assert sorted(got) == ends, name
        for end in ends:
            records = window_batches(batches, end, w)
            vals = [v for _, v in records]
            expected: list[Any] = {
                "window": records,
                "reduceByWindow": [sum(vals)] if vals else [],
                "reduceByWindow-inv": [sum(vals)] if vals else [],
                "rbkw": reduce_by_key(records),
                "rbkw-inv": reduce_by_key(records),
                "countByWindow": [len(records)],
                "countByValueAndWindow": sorted(Counter(k for k, _ in records).items()),
                "groupByKeyAndWindow": sorted(
                    (k, sorted(v for kk, v in records if kk == k)) for k in {k for k, _ in records}
                ),
            }[name]
            assert got[end] == normalize(expected), f"{name} window ending {end} (w={w}, s={s})"


def test_with_an_inverse_a_key_whose_values_cancel_stays_until_it_leaves(sc: Any) -> None:
    # a: +2 at 1 s, -2 at 2 s -> sum 0 but still inside the window; gone once both left.
    run_operation(
        sc,
        [[("a", 2)], [("a", -2)], [], [], []],
        lambda s: s.reduceByKeyAndWindow(operator.add, operator.sub, 3, 1),
        [[("a", 2)], [("a", 0)], [("a", 0)], [("a", -2)], []],
    )


def test_filter_func_filters_the_output_only(sc: Any) -> None:
    run_operation(
        sc,
        [[("a", 1), ("b", 5)], [("a", 1)], []],
        lambda s: s.reduceByKeyAndWindow(
            operator.add, operator.sub, 2, 1, None, lambda kv: kv[1] > 1
        ),
        [[("b", 5)], [("a", 2), ("b", 5)], []],
    )


def test_window_arguments_are_checked_against_the_parent_slide(harness: Any) -> None:
    s = harness().ssc.queueStream([[1]])
    with pytest.raises(
        ValueError,
        match=r"window\(\) windowDuration 2500 ms must be a multiple of the parent stream's slide 1000 ms",
    ):
        s.window(2.5)
    with pytest.raises(
        ValueError, match=r"reduceByKeyAndWindow\(\) slideDuration 1500 ms must be a multiple"
    ):
        s.map(lambda x: (x, x)).reduceByKeyAndWindow(operator.add, None, 3, 1.5)
    windowed = s.window(4, 2)
    with pytest.raises(
        ValueError,
        match=r"window\(\) windowDuration 3000 ms must be a multiple of the parent stream's slide 2000 ms",
    ):
        windowed.window(3)
    with pytest.raises(
        ValueError,
        match=r"union\(\) combines streams with different slide durations \[1000, 2000\]",
    ):
        s.union(windowed)


def test_non_inverse_windows_never_reread_raw_records(harness: Any) -> None:
    """Figure 4a: each interval's records are reduced once; windows reuse the partials."""
    h: Harness = harness()
    sc = h.ssc.sparkContext
    reads = sc.accumulator(0)

    def counted(kv: Any) -> Any:
        reads.add(1)
        return kv

    batches = [[("a", 1), ("b", 2)] for _ in range(6)]
    stream = h.ssc.queueStream([sc.parallelize(b, 2) for b in batches]).map(counted)
    got = BatchCollector(stream.reduceByKeyAndWindow(operator.add, None, 4, 1))
    h.ssc.start()
    h.run_batches(6)
    assert reads.value == 12  # every record read once, though each is in up to 4 windows
    assert got.in_order()[-1] and normalize(got.in_order()[-1]) == [("a", 4), ("b", 8)]


def test_keyed_state_keeps_one_partitioner_across_intervals(harness: Any) -> None:
    h: Harness = harness()
    sc = h.ssc.sparkContext
    batches = [[(k, 1) for k in "abcdefgh"] for _ in range(4)]
    stream = h.ssc.queueStream([sc.parallelize(b, 3) for b in batches])
    placements: list[dict[str, int]] = []
    partitioners: list[Any] = []

    def where(rdd: Any) -> None:
        partitioners.append(rdd.partitioner)
        placements.append(
            dict(rdd.mapPartitionsWithIndex(lambda i, it: ((k, i) for k, _ in it)).collect())
        )

    stream.reduceByKeyAndWindow(operator.add, operator.sub, 2, 1, 4).foreachRDD(where)
    stream.updateStateByKey(lambda new, old: (old or 0) + sum(new), 4).foreachRDD(where)
    h.ssc.start()
    h.run_batches(4)
    assert len({(p.numPartitions, p.partitionFunc) for p in partitioners}) == 1
    assert all(p == placements[0] for p in placements) and len(placements[0]) == 8


@pytest.mark.parametrize("replicas", [1, 2])
def test_state_is_kept_with_as_many_copies_as_the_settings_ask(harness: Any, replicas: int) -> None:
    """``state_replicas``: the window states (with and without an inverse), keyed state and
    track() are persisted in memory with that many copies, as Spark's block manager has them
    on record; what is not state (the section marks) keeps one."""
    from dstream import StreamingSettings

    h: Harness = harness(settings=StreamingSettings(state_replicas=replicas))
    sc = h.ssc.sparkContext
    stream = h.ssc.queueStream([sc.parallelize([("a", 1), ("b", 2)], 2) for _ in range(3)])
    outputs = [
        stream.reduceByKeyAndWindow(operator.add, operator.sub, 2, 1, 2),
        stream.reduceByKeyAndWindow(operator.add, None, 2, 1, 2),
        stream.updateStateByKey(lambda new, old: (old or 0) + sum(new), 2),
    ]
    got = [BatchCollector(o) for o in outputs]
    h.ssc.start()
    h.run_batches(3)
    assert [normalize(g.in_order()[-1]) for g in got] == [
        [("a", 2), ("b", 4)],
        [("a", 2), ("b", 4)],
        [("a", 3), ("b", 6)],
    ]
    infos = sc._jsc.sc().getRDDStorageInfo()
    cached = [(infos[i].name(), infos[i].storageLevel().replication()) for i in range(len(infos))]
    copies = Counter(r for _, r in cached)
    # At least the last interval's two window states and keyed state, and the non-inverse
    # window's partials, with `replicas` copies; never a level the settings did not ask for.
    assert copies[replicas] >= 4, cached
    assert set(copies) <= {1, replicas}, cached


def test_update_state_by_key_running_counts_with_removal(sc: Any) -> None:
    def update(new: list[int], old: int | None) -> int | None:
        total = (old or 0) + sum(new)
        return None if total >= 5 else total

    run_operation(
        sc,
        [[("a", 1), ("b", 2)], [("a", 1)], [("b", 3), ("c", 1)], []],
        lambda s: s.updateStateByKey(update),
        [[("a", 1), ("b", 2)], [("a", 2), ("b", 2)], [("a", 2), ("c", 1)], [("a", 2), ("c", 1)]],
    )


def test_update_state_by_key_gets_values_in_input_order_and_an_initial_state(sc: Any) -> None:
    run_operation(
        sc,
        [[("k", "a"), ("k", "b"), ("k", "c"), ("k", "d")], [("k", "e")]],
        lambda s: s.updateStateByKey(lambda new, old: (old or "") + "".join(new), 2, [("k", ">")]),
        [[("k", ">abcd")], [("k", ">abcde")]],
        partitions=3,
    )
