"""The program tests/cluster/test_deploy.py submits with ``spark-submit`` to a standalone
cluster whose executors' Python has pyspark but not dstream. A plain pyspark.streaming-style
program: running totals of the rate source's words, doubled from 2 to 4 partitions mid-run
(the JVM shim's narrow regroup runs on the executors), each interval's totals checked
against the sum of every interval's own counts so far (collected to the driver). Prints one
JSON line."""

from __future__ import annotations

import json
import sys
import tempfile
import threading
from collections import Counter
from typing import Any

from pyspark import SparkContext

from dstream import StreamingContext, StreamingSettings


def main() -> None:
    sc = SparkContext(appName="deploy-test")
    # At most 2 intervals generated ahead of the completed ones, so that the rescale (from
    # the next interval not generated yet) comes soon on a slow cluster.
    ssc = StreamingContext(sc, 1, settings=StreamingSettings(max_backlog=2))
    ssc.checkpoint(tempfile.mkdtemp(prefix="deploy-ckpt-"))
    pairs = ssc.rateStream(300, 2, seed=5).flatMap(str.split).map(lambda w: (w, 1))
    totals = pairs.updateStateByKey(lambda new, old: (old or 0) + sum(new), numPartitions=2)

    seen: Counter[str] = Counter()
    checked = threading.Condition()  # notified as each interval's totals are checked
    report: dict[str, Any] = {"intervals": 0, "wrong": [], "partitions": [], "times": []}

    def per_interval(rdd: Any) -> None:
        seen.update(dict(rdd.reduceByKey(lambda a, b: a + b).collect()))

    def check(time: Any, rdd: Any) -> None:
        with checked:
            report["intervals"] += 1
            report["times"].append(time.ms)
            report["partitions"].append(rdd.getNumPartitions())
            if dict(rdd.collect()) != dict(seen):
                report["wrong"].append(str(time))
            checked.notify_all()

    pairs.foreachRDD(per_interval)
    totals.foreachRDD(check)
    ssc.start()
    with checked:
        checked.wait_for(lambda: report["intervals"] >= 3)
    at = totals.rescale(4)  # from the next interval not generated yet
    with checked:
        checked.wait_for(lambda: report["times"][-1] > at.ms)
    ssc.stop(stopSparkContext=False, stopGraceFully=True)
    where = sc.parallelize(range(4), 4).map(lambda _: __import__("dstream").__file__).collect()
    report["executors_import_dstream_from"] = sorted(set(where))
    print(json.dumps(report))
    sc.stop()
    sys.exit(0)


if __name__ == "__main__":
    main()
