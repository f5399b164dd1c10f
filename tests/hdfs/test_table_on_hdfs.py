"""saveToTable on HDFS: each interval committed by Hadoop's no-replace rename into an
hdfs:// table, read back with Spark SQL, and the same program run again over a committed
interval (as a restarted driver or a replay would) does not commit it again."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from pyspark.sql import SparkSession

from dstream import Duration, ManualClock, StreamingContext, Time
from dstream.storage.commits import COMMIT_MARKER
from dstream.storage.filesystem import filesystem_for
from dstream.storage.parquet_table import META_NAME, committed_intervals
from testbed.hdfs import MiniHdfsCluster
from tests.hdfs.test_engine_on_hdfs import Place

B = 1000
SCHEMA = "word string, count long"


def run(sc: Any, table: str, batches: list[list[tuple[str, int]]]) -> None:
    clock = ManualClock(0)
    ssc = StreamingContext(sc, Duration(B), clock=clock)
    ssc.queueStream([sc.parallelize(b, 2) for b in batches]).saveToTable(table, SCHEMA)
    ssc.start()
    try:
        clock.advance(len(batches) * B)
        assert ssc.wait_for_batch(Time(len(batches) * B), 120)
        ssc.awaitTerminationOrTimeout(0)  # raises if an interval failed
    finally:
        ssc.stop(stopSparkContext=False)


def test_a_table_on_hdfs_is_read_back_with_spark_sql_each_interval_once(
    hdfs_sc: Any, hdfs_cluster: MiniHdfsCluster
) -> None:
    place = Place(hdfs_cluster, "table")
    table = place.uri("counts")
    batches = [[("a", 1), ("b", 2)], [("a", 4), ("c", 3)]]
    run(hdfs_sc, table, batches)
    spark = SparkSession.builder.getOrCreate()

    def read() -> dict[int, list[tuple[str, int]]]:
        found: dict[int, list[tuple[str, int]]] = defaultdict(list)
        for word, count, batch_ms in spark.sql(
            f"SELECT word, count, batch_ms FROM parquet.`{table}`"
        ).collect():
            found[batch_ms].append((word, count))
        return {t: sorted(rows) for t, rows in found.items()}

    want = {(i + 1) * B: sorted(b) for i, b in enumerate(batches)}
    assert read() == want
    fs = filesystem_for(table, hdfs_sc)
    assert committed_intervals(fs, table) == [1 * B, 2 * B]
    names = [META_NAME, *(f"batch_ms={t}" for t in want)]
    assert sorted(place.names("counts")) == sorted(names)  # nothing hidden left behind

    def commit_times() -> dict[str, int]:
        return {
            n: place.client.status(f"{place.base}/counts/{n}/{COMMIT_MARKER}")["modificationTime"]
            for n in names[1:]
        }

    before = commit_times()
    # Again over the first interval (as a restarted driver or a replay would), other data
    # in it: the committed interval is not written again.
    run(hdfs_sc, table, [[("X", 9)]])
    assert commit_times() == before
    assert sorted(place.names("counts")) == sorted(names)
    assert read() == want
