"""Streaming word count: the main demo job.

Reads 100-byte text records from the deterministic rate source (or the new files of a
directory), counts words per interval and prints each interval's most frequent words, for a
bounded time, then stops cleanly.

    python apps/wordcount.py --rate 2000 --seconds 20
    python apps/wordcount.py --source files --dir /data/in --seconds 60
"""

from __future__ import annotations

import argparse
import operator
import os
import sys
from typing import Any

from pyspark import SparkConf, SparkContext

from dstream import DStream, StreamingContext, StreamingListener, Time


def word_counts(lines: DStream[str]) -> DStream[tuple[str, int]]:
    return lines.flatMap(str.split).map(lambda w: (w, 1)).reduceByKey(operator.add)


def print_top(n: int) -> Any:
    def show(time: Time, rdd: Any) -> None:
        top = rdd.takeOrdered(n, key=lambda kv: (-kv[1], kv[0]))
        words = "  ".join(f"{w}:{c}" for w, c in top)
        print(f"[{time.strftime('%H:%M:%S')}] top {n}: {words}", flush=True)

    return show


class Progress(StreamingListener):
    def onBatchCompleted(self, batchCompleted: Any) -> None:
        info = batchCompleted.batchInfo()
        print(
            f"    batch {info.batchTime().ms} ms: {info.numRecords()} records, "
            f"processing {info.processingDelay()} ms, total delay {info.totalDelay()} ms",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--source", choices=["rate", "files"], default="rate")
    p.add_argument("--rate", type=int, default=2000, help="records per second (rate source)")
    p.add_argument("--dir", help="directory to watch (files source)")
    p.add_argument("--batch", default="1s", help="batch interval, e.g. 500ms, 1s")
    p.add_argument("--seconds", type=float, default=20, help="how long to run")
    p.add_argument("--top", type=int, default=5)
    p.add_argument("--master", default=os.environ.get("DSTREAM_MASTER", "local[2]"))
    args = p.parse_args(argv)
    if args.source == "files" and not args.dir:
        p.error("--source files needs --dir DIRECTORY")

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = (
        SparkConf()
        .setMaster(args.master)
        .setAppName("dstream-wordcount")
        .set("spark.ui.showConsoleProgress", "false")
    )
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    ssc = StreamingContext(sc, args.batch)
    lines = ssc.rateStream(args.rate) if args.source == "rate" else ssc.textFileStream(args.dir)
    word_counts(lines).foreachRDD(print_top(args.top))
    ssc.addStreamingListener(Progress())
    ssc.start()
    try:
        ssc.awaitTerminationOrTimeout(args.seconds)
    finally:
        ssc.stop(stopSparkContext=True, stopGraceFully=True)
    print("stopped cleanly", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
