"""Operators on (key, value) streams and joins of two streams, interval by interval."""

from __future__ import annotations

import operator
from typing import Any

from dstream.testing.streams import run_operation

PAIRS = [[("a", 1), ("b", 2), ("a", 3)], [("b", 4)], []]
LEFT = [[("a", 1), ("b", 2)], [("c", 3)], [("d", 4)]]
RIGHT = [[("a", "x"), ("c", "y")], [("c", "z"), ("c", "w")], []]


def test_map_values_and_flat_map_values(sc: Any) -> None:
    run_operation(
        sc,
        PAIRS,
        lambda s: s.mapValues(lambda v: v * 10),
        [[("a", 10), ("b", 20), ("a", 30)], [("b", 40)], []],
    )
    run_operation(
        sc,
        [[("a", "x y"), ("b", "z")]],
        lambda s: s.flatMapValues(str.split),
        [[("a", "x"), ("a", "y"), ("b", "z")]],
    )


def test_reduce_by_key(sc: Any) -> None:
    run_operation(
        sc, PAIRS, lambda s: s.reduceByKey(operator.add), [[("a", 4), ("b", 2)], [("b", 4)], []]
    )


def test_reduce_by_key_into_given_partitions(sc: Any) -> None:
    out = run_operation(sc, PAIRS[:1], lambda s: s.reduceByKey(operator.add, 3).glom().map(len))
    assert len(out[0]) == 3


def test_combine_by_key(sc: Any) -> None:
    run_operation(
        sc,
        PAIRS,
        lambda s: s.combineByKey(
            lambda v: [v], lambda c, v: [*c, v], lambda c1, c2: c1 + c2
        ).mapValues(sorted),
        [[("a", [1, 3]), ("b", [2])], [("b", [4])], []],
    )


def test_group_by_key(sc: Any) -> None:
    run_operation(
        sc,
        PAIRS,
        lambda s: s.groupByKey().mapValues(sorted),
        [[("a", [1, 3]), ("b", [2])], [("b", [4])], []],
    )


def test_partition_by_places_keys_by_the_function(sc: Any) -> None:
    run_operation(
        sc,
        [[(1, "a"), (2, "b"), (3, "c"), (4, "d")]],
        lambda s: (
            s.partitionBy(2, lambda k: k % 2).glom().map(lambda part: sorted(k for k, _ in part))
        ),
        [[[1, 3], [2, 4]]],
    )


def test_joins(sc: Any) -> None:
    both = [LEFT, RIGHT]
    run_operation(
        sc,
        both,
        lambda a, b: a.join(b),
        [[("a", (1, "x"))], [("c", (3, "z")), ("c", (3, "w"))], []],
        num_inputs=2,
    )
    run_operation(
        sc,
        both,
        lambda a, b: a.leftOuterJoin(b),
        [
            [("a", (1, "x")), ("b", (2, None))],
            [("c", (3, "z")), ("c", (3, "w"))],
            [("d", (4, None))],
        ],
        num_inputs=2,
    )
    run_operation(
        sc,
        both,
        lambda a, b: a.rightOuterJoin(b),
        [[("a", (1, "x")), ("c", (None, "y"))], [("c", (3, "z")), ("c", (3, "w"))], []],
        num_inputs=2,
    )
    run_operation(
        sc,
        both,
        lambda a, b: a.fullOuterJoin(b),
        [
            [("a", (1, "x")), ("b", (2, None)), ("c", (None, "y"))],
            [("c", (3, "z")), ("c", (3, "w"))],
            [("d", (4, None))],
        ],
        num_inputs=2,
    )


def test_cogroup(sc: Any) -> None:
    run_operation(
        sc,
        [LEFT, RIGHT],
        lambda a, b: a.cogroup(b).mapValues(lambda vs: (sorted(vs[0]), sorted(vs[1]))),
        [
            [("a", ([1], ["x"])), ("b", ([2], [])), ("c", ([], ["y"]))],
            [("c", ([3], ["w", "z"]))],
            [("d", ([4], []))],
        ],
        num_inputs=2,
    )


def test_transform_with_two_or_three_arguments(sc: Any) -> None:
    run_operation(
        sc,
        [LEFT, RIGHT],
        lambda a, b: a.transformWith(lambda x, y: x.keys().union(y.keys()).distinct(), b),
        [["a", "b", "c"], ["c"], ["d"]],
        num_inputs=2,
    )
    run_operation(
        sc,
        [LEFT, RIGHT],
        lambda a, b: a.transformWith(lambda t, x, y: x.map(lambda kv, ms=t.ms: (ms, kv[0])), b),
        [[(1000, "a"), (1000, "b")], [(2000, "c")], [(3000, "d")]],
        num_inputs=2,
    )
