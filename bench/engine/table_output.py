"""What an interval's ``saveToTable`` costs next to ``saveAsTextFiles``, in the same run.

One program on local[2], on the system clock (durations are measured on the program's
clock, so a ManualClock would show 0 ms), 2 s intervals: each interval is the same cached
RDD of ``--records`` ``(word, count)`` pairs (each word once) in 4 partitions, written by
both outputs (text first, then the table, every interval: same data, same JVM, same
moment). Each output operation's duration is taken from the listener
(``onOutputOperationCompleted``), the first ``--warmup`` intervals dropped; medians and the
ratio printed, and written to
``bench/results/table_output.json`` (``--mode upsert``: the table keyed by word, written to
``table_output-upsert.json``).

    .venv/bin/python -m bench.engine.table_output --intervals 30 --records 20000
    .venv/bin/python -m bench.engine.table_output --intervals 30 --records 20000 --mode upsert
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parents[1] / "results" / "table_output.json"


def run(intervals: int, records: int, warmup: int, mode: str = "append") -> dict[str, Any]:
    import threading

    from pyspark import SparkConf, SparkContext

    from dstream import Duration, StreamingContext, StreamingListener

    conf = SparkConf().setMaster("local[2]").setAppName("table-output-bench")
    conf.set("spark.ui.enabled", "false")
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    out = tempfile.mkdtemp(prefix="dstream-table-bench-")
    durations: dict[str, dict[int, int]] = {"saveAsTextFiles": {}, "saveToTable": {}}

    class Durations(StreamingListener):
        def onOutputOperationCompleted(self, outputOperationCompleted: Any) -> None:
            info = outputOperationCompleted.outputOperationInfo()
            kind = info.name().split(" ")[0]
            if kind in durations:
                durations[kind][info.batchTime().ms] = info.duration()

    # One row per key in an interval, as an upsert table takes (a reduced stream's output).
    words = [f"w{i}" for i in range(records)]
    batch = sc.parallelize([(w, i) for i, w in enumerate(words)], 4).cache()
    batch.count()
    ssc = StreamingContext(sc, Duration(2000))
    ssc.addStreamingListener(Durations())
    stream = ssc.queueStream([batch] * intervals, oneAtATime=True)
    stream.saveAsTextFiles(f"{out}/text/counts")
    if mode == "upsert":
        stream.saveToTable(f"{out}/table", "word string, count long", mode="upsert", key="word")
    else:
        stream.saveToTable(f"{out}/table", "word string, count long")
    ssc.start()
    pause = threading.Event()
    try:
        for _ in range(intervals * 10 + 100):  # at most 5 s an interval
            if all(len(d) >= intervals for d in durations.values()):
                break
            pause.wait(1.0)
    finally:
        ssc.stop(stopSparkContext=True, stopGraceFully=True)
    kept = {k: [v for _, v in sorted(d.items())][warmup:intervals] for k, d in durations.items()}
    text = statistics.median(kept["saveAsTextFiles"])
    table = statistics.median(kept["saveToTable"])
    return {
        "intervals": intervals,
        "warmup": warmup,
        "records": records,
        "mode": mode,
        "median_ms": {"saveAsTextFiles": text, "saveToTable": table},
        "ratio": round(table / text, 2) if text else None,
        "ms": kept,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--intervals", type=int, default=30)
    p.add_argument("--records", type=int, default=20_000)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--mode", choices=("append", "upsert"), default="append")
    args = p.parse_args(argv)
    if args.intervals <= args.warmup:
        p.error(f"--intervals {args.intervals} must be more than --warmup {args.warmup}")
    result = run(args.intervals, args.records, args.warmup, args.mode)
    path = RESULTS if args.mode == "append" else RESULTS.with_name("table_output-upsert.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n")
    med = result["median_ms"]
    print(
        f"per interval, median of {args.intervals - args.warmup}: saveAsTextFiles "
        f"{med['saveAsTextFiles']} ms, saveToTable {med['saveToTable']} ms "
        f"(x{result['ratio']}), {args.records} records, {args.mode}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
