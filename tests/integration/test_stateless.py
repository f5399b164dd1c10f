"""Stateless operators, interval by interval, against expected output."""

from __future__ import annotations

import operator
from typing import Any

import pytest

from dstream.testing.streams import run_operation

from .conftest import Harness

NUMBERS = [[1, 2, 3, 4], [5, 6], [], [7, 8, 9]]


def test_map(sc: Any) -> None:
    run_operation(
        sc, NUMBERS, lambda s: s.map(str), [["1", "2", "3", "4"], ["5", "6"], [], ["7", "8", "9"]]
    )


def test_flat_map(sc: Any) -> None:
    run_operation(
        sc,
        [["a b", "c"], ["d e f"]],
        lambda s: s.flatMap(str.split),
        [["a", "b", "c"], ["d", "e", "f"]],
    )


def test_filter(sc: Any) -> None:
    run_operation(sc, NUMBERS, lambda s: s.filter(lambda x: x % 2 == 0), [[2, 4], [6], [], [8]])


def test_map_partitions_sees_whole_partitions(sc: Any) -> None:
    run_operation(
        sc,
        [[1, 2, 3, 4], [5, 6]],
        lambda s: s.mapPartitions(lambda it: [sum(it)]),
        [[3, 7], [5, 6]],
        partitions=2,
    )


def test_map_partitions_with_index(sc: Any) -> None:
    run_operation(
        sc,
        [[1, 2, 3, 4]],
        lambda s: s.mapPartitionsWithIndex(lambda i, it: [(i, x) for x in it]),
        [[(0, 1), (0, 2), (1, 3), (1, 4)]],
    )


def test_glom(sc: Any) -> None:
    run_operation(sc, [[1, 2, 3, 4], [5]], lambda s: s.glom(), [[[1, 2], [3, 4]], [[], [5]]])


def test_reduce(sc: Any) -> None:
    run_operation(sc, NUMBERS, lambda s: s.reduce(operator.add), [[10], [11], [], [24]])


def test_count_gives_zero_for_an_empty_interval(sc: Any) -> None:
    run_operation(sc, NUMBERS, lambda s: s.count(), [[4], [2], [0], [3]])


def test_count_of_an_exhausted_queue_is_zero(sc: Any) -> None:
    # The 3rd and 4th intervals have no RDD in the queue: an empty RDD with no partitions.
    run_operation(sc, [[1], [2, 3]], lambda s: s.count(), [[1], [2], [0], [0]], num_batches=4)


def test_count_by_value(sc: Any) -> None:
    run_operation(
        sc,
        [["a", "b", "a"], ["c"], []],
        lambda s: s.countByValue(),
        [[("a", 2), ("b", 1)], [("c", 1)], []],
    )


def test_repartition(sc: Any) -> None:
    out = run_operation(sc, [list(range(20))], lambda s: s.repartition(5).glom().map(len))
    assert len(out[0]) == 5 and sum(out[0]) == 20


def test_transform_with_one_or_two_arguments(sc: Any) -> None:
    run_operation(
        sc,
        NUMBERS[:2],
        lambda s: s.transform(lambda rdd: rdd.map(lambda x: -x)),
        [[-1, -2, -3, -4], [-5, -6]],
    )
    run_operation(
        sc,
        NUMBERS[:2],
        lambda s: s.transform(
            lambda t, rdd: rdd.map(lambda x, ms=t.ms: (ms, x)).filter(
                lambda p: p[1] < 2 or p[1] == 6
            )
        ),
        [[(1000, 1)], [(2000, 6)]],
    )


def test_union_of_two_streams(sc: Any) -> None:
    run_operation(
        sc,
        [[[1, 2], [3]], [[10], [], [20]]],
        lambda a, b: a.union(b),
        [[1, 2, 10], [3], [20]],
        num_inputs=2,
    )


def test_context_union_and_transform_of_many_streams(harness: Any) -> None:
    h: Harness = harness()
    sc = h.ssc.sparkContext
    streams = [
        h.ssc.queueStream([sc.parallelize([i * 10 + j]) for j in range(2)]) for i in range(3)
    ]
    union = h.ssc.union(*streams)
    summed = h.ssc.transform(streams, lambda rdds: sc.union(list(rdds)).map(lambda x: x + 1))
    with_time = h.ssc.transform(streams, lambda t, rdds: rdds[0].map(lambda x, ms=t.ms: (ms, x)))
    got: dict[str, list[list[Any]]] = {"u": [], "s": [], "t": []}
    union.foreachRDD(lambda rdd: got["u"].append(sorted(rdd.collect())))
    summed.foreachRDD(lambda rdd: got["s"].append(sorted(rdd.collect())))
    with_time.foreachRDD(lambda rdd: got["t"].append(rdd.collect()))
    h.ssc.start()
    h.run_batches(2)
    assert got["u"] == [[0, 10, 20], [1, 11, 21]]
    assert got["s"] == [[1, 11, 21], [2, 12, 22]]
    assert got["t"] == [[(1000, 0)], [(2000, 1)]]


def test_chained_operators_compose(sc: Any) -> None:
    run_operation(
        sc,
        [["to be or", "not to be"], ["be"]],
        lambda s: (
            s.flatMap(str.split)
            .map(lambda w: (w, 1))
            .reduceByKey(operator.add)
            .filter(lambda kv: kv[1] > 1)
        ),
        [[("be", 2), ("to", 2)], []],
    )


def test_cache_persists_each_interval_and_unpersists_old_ones(harness: Any) -> None:
    h: Harness = harness()
    cached = h.ssc.queueStream([[1], [2], [3]]).map(lambda x: x * 2).cache()
    rdds: list[Any] = []
    seen: list[bool] = []

    def look(rdd: Any) -> None:
        rdds.append(rdd)
        seen.append(rdd.is_cached)

    cached.foreachRDD(look)
    h.ssc.start()
    h.run_batches(3)
    assert seen == [True, True, True]
    # Only what the remember duration needs is kept (one interval here); older RDDs are
    # unpersisted when the batch after them completes.
    assert list(cached._node._generated.values()) == [rdds[2]]
    assert [r.is_cached for r in rdds] == [False, False, True]


@pytest.mark.parametrize("oneAtATime", [True, False])
def test_queue_stream_one_or_all_at_a_time(sc: Any, harness: Any, oneAtATime: bool) -> None:
    h: Harness = harness()
    stream = h.ssc.queueStream([[1, 2], [3]], oneAtATime=oneAtATime, default=[0])
    got: list[list[int]] = []
    stream.foreachRDD(lambda rdd: got.append(sorted(rdd.collect())))
    h.ssc.start()
    h.run_batches(3)
    if oneAtATime:
        assert got == [[1, 2], [3], [0]]
    else:
        assert got == [[1, 2, 3], [0], [0]]


def test_slice_returns_remembered_intervals(harness: Any) -> None:
    h: Harness = harness()
    stream = h.ssc.queueStream([[1], [2], [3], [4]]).map(lambda x: x * 10)
    stream.remember(10)  # seconds
    stream.foreachRDD(lambda rdd: None)
    h.ssc.start()
    h.run_batches(4)
    from dstream import Time

    rdds = stream.slice(Time(2000), Time(3000))
    assert [r.collect() for r in rdds] == [[20], [30]]
    assert [r.collect() for r in stream.slice(1, 4)] == [[10], [20], [30], [40]]
    # As PySpark (and Spark's DStream.slice): bounds move back onto the grid, and an end
    # before the begin is an empty slice, not an error.
    assert [r.collect() for r in stream.slice(2.5, 3.9)] == [[20], [30]]
    assert stream.slice(Time(3000), Time(2000)) == []
