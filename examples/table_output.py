"""Word counts appended to a Parquet table, one interval at a time and each exactly once,
queried with Spark SQL while the stream runs; their running totals upserted by word into a
second table, whose current view is each word's newest total.

    python examples/table_output.py [SECONDS]
"""

from __future__ import annotations

import sys
import tempfile
import time
from typing import Any

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from dstream import StreamingContext, read_table

WORDS = ["ann", "bob", "cat", "ann", "bob", "ann"]


def main(seconds: float = 4) -> dict[str, Any]:
    sc = SparkContext.getOrCreate(SparkConf().setAppName("table-output"))
    root = tempfile.mkdtemp(prefix="dstream-table-")
    table = root + "/counts"
    ssc = StreamingContext(sc, 1)
    ssc.checkpoint(root + "/checkpoints")
    batches = [sc.parallelize(WORDS, 2) for _ in range(int(seconds))]
    counts = ssc.queueStream(batches).map(lambda w: (w, 1)).reduceByKey(lambda a, b: a + b)
    counts.saveToTable(table, "word string, count long")
    running = counts.updateStateByKey(lambda new, old: (old or 0) + sum(new))
    running.saveToTable(root + "/totals", "word string, count long", mode="upsert", key="word")
    spark = SparkSession.builder.getOrCreate()
    ssc.start()
    time.sleep(2.5)
    # Live: the intervals committed so far (read_table also before the first one).
    live = read_table(spark, table).selectExpr("count(DISTINCT batch_ms) AS n").first()
    time.sleep(seconds - 2.5 + 1.5)
    ssc.stop(stopGraceFully=True)
    # A SQL view over the path lists the table at every query: live while a stream runs.
    spark.sql(f"CREATE OR REPLACE TEMP VIEW counts AS SELECT * FROM parquet.`{table}`")
    totals = spark.sql("SELECT word, sum(count) AS total FROM counts GROUP BY word ORDER BY word")
    result = {row.word: row.total for row in totals.collect()}
    # The upsert table's current view: one row per word, its newest running total.
    upserted = {row.word: row["count"] for row in read_table(spark, root + "/totals").collect()}
    print("intervals committed when first queried:", live.n)
    print("totals:", result)
    print("running totals (upserted):", upserted)
    return {"live_intervals": live.n, "totals": result, "running": upserted, "table": table}


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 4)
