"""The 10 most frequent words of the last 10 seconds, every second, kept incrementally: each
interval adds the words that arrived and subtracts those that left the window (an inverse
function), instead of summing 10 intervals again.

    python examples/windowed_counts.py [SECONDS]
    spark-submit --master URL examples/windowed_counts.py [SECONDS]

The input is the rate source: deterministic lines of words generated on the executors, so
the example needs no files and a recomputed interval reads the same words.
"""

from __future__ import annotations

import sys
import tempfile
import time
from operator import add, sub
from typing import Any

from pyspark import SparkConf, SparkContext

from dstream import StreamingContext


def main(seconds: float = 10) -> list[tuple[Any, list[tuple[str, int]], list[tuple[str, int]]]]:
    sc = SparkContext.getOrCreate(SparkConf().setAppName("windowed"))
    ssc = StreamingContext(sc, 1)
    ssc.checkpoint(tempfile.mkdtemp(prefix="windowed-"))  # a window with an inverse is state

    pairs = ssc.rateStream(500, seed=1).flatMap(str.split).map(lambda w: (w, 1))
    window = pairs.reduceByKeyAndWindow(add, sub, windowDuration=10, slideDuration=1)

    # The same window summed again every interval, to show both agree.
    summed = pairs.window(windowDuration=10, slideDuration=1).reduceByKey(add)

    tops: dict[Any, list[tuple[str, int]]] = {}
    again: dict[Any, list[tuple[str, int]]] = {}

    def top10(into: dict[Any, list[tuple[str, int]]], time: Any, rdd: Any) -> None:
        into[time] = rdd.takeOrdered(10, key=lambda kv: (-kv[1], kv[0]))

    window.foreachRDD(lambda time, rdd: top10(tops, time, rdd))
    summed.foreachRDD(lambda time, rdd: top10(again, time, rdd))
    window.foreachRDD(lambda time, rdd: print(time, tops[time][:3]))
    ssc.start()
    time.sleep(seconds)
    ssc.stop(stopGraceFully=True)
    agree = all(tops[t] == again.get(t) for t in tops)
    print(f"{len(tops)} windows; the incremental and the summed window agree: {agree}")
    return [(t, tops[t], again.get(t, [])) for t in sorted(tops)]


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 10)
