"""Ask a running program about its state: the newest completed interval's totals as an RDD,
one key's total, and SQL on a view that always reads the newest interval, while the program
goes on (the same queries `dstream shell APP.py` lets you type).

    python examples/live_query.py [SECONDS]
    spark-submit --master URL examples/live_query.py [SECONDS]
"""

from __future__ import annotations

import sys
import time
from typing import Any

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from dstream import StreamingContext


def main(seconds: float = 6) -> dict[str, Any]:
    sc = SparkContext.getOrCreate(SparkConf().setAppName("live-query"))
    spark = SparkSession(sc)
    ssc = StreamingContext(sc, 1)
    words = ssc.rateStream(300, seed=3).flatMap(str.split).map(lambda w: (w, 1))
    totals = words.updateStateByKey(lambda new, old: (old or 0) + sum(new))
    totals.setName("totals").foreachRDD(lambda rdd: None)  # an output makes it run
    ssc.start()
    time.sleep(seconds)

    snapshot = totals.snapshot()  # pinned: it stays readable while the stream goes on
    state = dict(snapshot.collect())
    top_word = max(state, key=lambda w: (state[w], w))
    totals.createOrReplaceTempView("totals")
    rows = spark.sql("select key, value from totals order by value desc, key desc limit 3")
    top3 = [(row.key, row.value) for row in rows.collect()]
    answer = {
        "interval": snapshot.interval,
        "keys": len(state),
        "top_word": top_word,
        "lookup": totals.lookup(top_word),
        "sql_top3": top3,
    }
    print(answer)
    ssc.stop(stopGraceFully=True)
    return answer


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 6)
