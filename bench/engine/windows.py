"""Cost per interval of a sliding-window word count as the window grows, with and without the
inverse function.

A word count over the rate source (100-byte records, Zipf words, 1 s intervals) keeps its
counts over windows of 10, 30 and 60 s with ``reduceByKeyAndWindow``: once with the inverse
(``operator.sub``: previous window + entering interval - leaving interval) and once without
(every interval combines the persisted partials of every interval in the window). The clock
is a ManualClock, so intervals run back to back; the cost of an interval is the wall time
from advancing the clock to the batch's completion, once the window is full.

    .venv/bin/python -m bench.engine.windows --rate 2000 --windows 10 30 60 --measure 15
"""

from __future__ import annotations

import argparse
import json
import operator
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.common.spark import spark_context


def run_one(sc: Any, rate: int, window_s: int, inverse: bool, measure: int) -> list[float]:
    from dstream import Duration, ManualClock, StreamingContext, Time

    clock = ManualClock(0)
    ssc = StreamingContext(sc, Duration(1000), clock=clock)
    words = ssc.rateStream(rate, numPartitions=2, seed=1).flatMap(str.split)
    counts = words.map(lambda w: (w, 1)).reduceByKeyAndWindow(
        operator.add, operator.sub if inverse else None, window_s, 1, 2
    )
    counts.foreachRDD(lambda rdd: rdd.count())
    ssc.start()
    costs = []
    total = window_s + measure
    for i in range(1, total + 1):
        began = time.perf_counter()
        clock.advance(1000)
        if not ssc.wait_for_batch(Time(i * 1000), 600):
            raise RuntimeError(f"batch {i} did not complete")
        if i > window_s:
            costs.append(time.perf_counter() - began)
    ssc.stop(stopSparkContext=False)
    return costs


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rate", type=int, default=2000)
    p.add_argument("--windows", type=int, nargs="+", default=[10, 30, 60])
    p.add_argument("--measure", type=int, default=15, help="intervals measured once full")
    p.add_argument(
        "--out", default=str(Path(__file__).resolve().parents[1] / "results" / "windows.json")
    )
    args = p.parse_args()
    sc = spark_context("dstream-bench-windows")
    rows = []
    for window in args.windows:
        for inverse in (True, False):
            costs = run_one(sc, args.rate, window, inverse, args.measure)
            row = {
                "window_s": window,
                "inverse": inverse,
                "median_ms": 1000 * statistics.median(costs),
                "p90_ms": 1000 * sorted(costs)[int(0.9 * (len(costs) - 1))],
                "intervals": len(costs),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    sc.stop()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"rate": args.rate, "rows": rows}, indent=2))
    print(f"\nrate {args.rate} records/s, 1 s intervals, median cost per interval (ms):")
    print("window   with inverse   without   without/with")
    for window in args.windows:
        w = next(r for r in rows if r["window_s"] == window and r["inverse"])
        wo = next(r for r in rows if r["window_s"] == window and not r["inverse"])
        print(
            f"{window:4d} s   {w['median_ms']:10.0f}   {wo['median_ms']:9.0f}   "
            f"{wo['median_ms'] / w['median_ms']:8.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
