"""The engine's shuffle (partition_by) puts every record where PySpark's partitionBy does,
and Spark (Python and JVM) sees both as one partitioner: a union of the two stays narrow."""

from __future__ import annotations

from typing import Any

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
