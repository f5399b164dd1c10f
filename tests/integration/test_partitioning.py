"""The engine's shuffle (partition_by) puts every record where PySpark's partitionBy does,
and Spark (Python and JVM) sees both as one partitioner: a union of the two stays narrow.
Both kinds of shuffle get one Kryo pool per JVM (share_kryo) and give the same records."""

from __future__ import annotations

from operator import add
from typing import Any

from dstream.jvm import SHUFFLES_CLASS, invoke_static, share_kryo, shim_class
from dstream.streams.copartitioned import co_partitioned_union, partition_by

RECORDS = [(f"w{i % 997}", i) for i in range(5000)] + [
    (None, 1),
    ((1, "a"), 2),
    (3.5, 3),
    (-4, 4),
]


def test_partition_by_places_records_as_pyspark_does(sc: Any) -> None:
    rdd = sc.parallelize(RECORDS, 3)
    ours = partition_by(rdd, 4)
    theirs = rdd.partitionBy(4)
    assert ours.getNumPartitions() == 4
    assert [sorted(map(repr, p)) for p in ours.glom().collect()] == [
        sorted(map(repr, p)) for p in theirs.glom().collect()
    ]
    assert ours.partitioner == theirs.partitioner
    assert partition_by(theirs, 4) is theirs  # already partitioned so: no second shuffle


def test_partition_by_gives_tuples_as_pyspark_does(sc: Any) -> None:
    rdd = sc.parallelize([["a", 1], ["b", 2]], 2)  # lists in, (key, value) tuples out
    assert sorted(partition_by(rdd, 2).collect()) == sorted(rdd.partitionBy(2).collect())
    assert all(type(r) is tuple for r in partition_by(rdd, 2).collect())


def test_a_union_with_pysparks_partitioning_stays_narrow(sc: Any) -> None:
    a = partition_by(sc.parallelize(RECORDS[:2000], 2), 3)
    b = sc.parallelize(RECORDS[2000:], 5).partitionBy(3)
    union = co_partitioned_union([a, b])
    # A PartitionerAwareUnionRDD in the JVM: 3 partitions, not 3 + 3.
    assert union.getNumPartitions() == 3
    assert union.partitioner == a.partitioner
    both = union.glom().collect()
    assert sorted(r for p in both for r in map(repr, p)) == sorted(map(repr, RECORDS))
    expected = partition_by(sc.parallelize(RECORDS, 4), 3).glom().collect()
    assert [sorted(map(repr, p)) for p in both] == [sorted(map(repr, p)) for p in expected]


def _shuffles(sc: Any, jrdd: Any) -> list[Any]:
    """The JVM ShuffledRDDs in ``jrdd``'s lineage."""
    found, todo, seen = [], [jrdd], set()
    while todo:
        node = todo.pop()
        if node.id() in seen:
            continue
        seen.add(node.id())
        if node.getClass().getName() == "org.apache.spark.rdd.ShuffledRDD":
            found.append(node)
        deps = node.dependencies()
        todo.extend(deps.apply(i).rdd() for i in range(deps.size()))
    return found


def test_pysparks_and_the_engines_shuffles_share_one_kryo_pool_per_jvm(sc: Any) -> None:
    def program() -> Any:
        a = sc.parallelize(RECORDS, 3).map(lambda kv: (repr(kv[0]), kv[1])).reduceByKey(add, 3)
        b = partition_by(sc.parallelize(RECORDS, 2).map(lambda kv: (repr(kv[0]), 1)), 3)
        return co_partitioned_union([a, b]).reduceByKey(add, 3)  # narrow: no third shuffle

    plain = sorted(program().collect())  # Spark's own Kryo, one per task
    shared = program()
    assert share_kryo(shared) == 2  # before any job: both shuffles get it
    shuffles = _shuffles(sc, shared._jrdd.rdd())
    cls = shim_class(sc, SHUFFLES_CLASS)
    assert len(shuffles) == 2
    assert all(invoke_static(sc, cls, "shares", ("org.apache.spark.rdd.RDD", s)) for s in shuffles)
    assert sorted(shared.collect()) == plain
    assert share_kryo(shared) == 0  # walked once: an interval's RDDs are not walked again
    # A shuffle Spark has built already keeps its serializer.
    late = program()
    late.count()
    assert share_kryo(late) == 0
    assert not any(
        invoke_static(sc, cls, "shares", ("org.apache.spark.rdd.RDD", s))
        for s in _shuffles(sc, late._jrdd.rdd())
    )
    assert sorted(late.collect()) == plain
