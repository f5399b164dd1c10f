"""Timestep pipelining on and off: the time per interval when intervals queue up (the rate
the engine sustains), for programs whose tasks underfill the cores and programs that fill
them, on local[2].

Each run is a ManualClock advanced by ``--intervals`` intervals at once after a warm-up, so
the intervals queue as they would behind a slow one; the figure is the wall time until the
last completed, divided by the number of intervals. Every depth's per-interval outputs are
compared with depth 1's before any time is reported.

    .venv/bin/python -m bench.engine.pipelining --intervals 30 --rounds 3 --depths 1 2 3
"""

from __future__ import annotations

import argparse
import json
import operator
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common.spark import spark_context

RESULTS = Path(__file__).resolve().parents[1] / "results"
B = 1000
WARMUP = 3


def grep(ssc: Any, partitions: int, rate: int) -> Any:
    lines = ssc.rateStream(rate, numPartitions=partitions, seed=3)
    return lines.filter(lambda line: "the" in line.split()).count()


def wordcount(ssc: Any, partitions: int, rate: int) -> Any:
    pairs = ssc.rateStream(rate, numPartitions=partitions, seed=4).flatMap(str.split)
    counts = pairs.map(lambda w: (w, 1)).reduceByKeyAndWindow(
        operator.add, operator.sub, 10, 1, partitions
    )
    return counts.map(lambda kv: kv[1]).reduce(operator.add)  # total words in the window


WORKLOADS = {"grep": grep, "wordcount": wordcount}


def run(sc: Any, workload: str, partitions: int, depth: int, args: argparse.Namespace) -> Any:
    from dstream import Duration, ManualClock, StreamingContext, Time
    from dstream.settings import StreamingSettings

    clock = ManualClock(0)
    ssc = StreamingContext(
        sc, Duration(B), clock=clock, settings=StreamingSettings(pipelining_depth=depth)
    )
    with tempfile.TemporaryDirectory(prefix="dstream-pipelining-") as root:
        ssc.checkpoint(root)
        out: dict[int, Any] = {}
        stream = WORKLOADS[workload](ssc, partitions, args.rate)
        stream.foreachRDD(lambda t, rdd: out.__setitem__(t.ms, rdd.collect()))
        ssc.start()
        try:
            for i in range(1, WARMUP + 1):
                clock.advance(B)
                assert ssc.wait_for_batch(Time(i * B), 300)
            began = time.perf_counter()
            for _ in range(args.intervals):
                clock.advance(B)
            last = Time((WARMUP + args.intervals) * B)
            assert ssc.wait_for_batch(last, 600), "the intervals did not complete"
            elapsed = time.perf_counter() - began
            ssc.awaitTerminationOrTimeout(0)
        finally:
            ssc.stop(stopSparkContext=False)
    return elapsed * 1000 / args.intervals, out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--intervals", type=int, default=30)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--rate", type=int, default=20000, help="records per interval")
    p.add_argument("--depths", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--partitions", type=int, nargs="+", default=[1, 2])
    p.add_argument("--workloads", nargs="+", choices=sorted(WORKLOADS), default=sorted(WORKLOADS))
    p.add_argument("--out", default="pipelining.json", help="file name under bench/results")
    args = p.parse_args()
    sc = spark_context("dstream-bench-pipelining", spark__ui__enabled="false")
    results: list[dict[str, Any]] = []
    try:
        for workload in args.workloads:
            for partitions in args.partitions:
                times: dict[int, list[float]] = {d: [] for d in args.depths}
                reference = None
                for _ in range(args.rounds):
                    for depth in args.depths:  # interleaved: drift hits every depth alike
                        ms, out = run(sc, workload, partitions, depth, args)
                        if reference is None:
                            reference = out
                        elif out != reference:
                            raise RuntimeError(f"{workload} at depth {depth} changed the output")
                        times[depth].append(ms)
                row = {
                    "workload": workload,
                    "partitions": partitions,
                    "ms_per_interval": {d: statistics.median(v) for d, v in times.items()},
                    "all_ms": times,
                }
                results.append(row)
                print(json.dumps(row), flush=True)
    finally:
        sc.stop()
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / args.out).write_text(json.dumps(results, indent=1) + "\n")
    base = args.depths[0]
    print("\n| workload | tasks per stage | " + " | ".join(f"depth {d}" for d in args.depths))
    print("| --- | --- | " + " | ".join("---" for _ in args.depths) + " |")
    for row in results:
        ms = row["ms_per_interval"]
        cells = [f"{ms[d]:.0f} ms ({ms[base] / ms[d]:.2f}x)" for d in args.depths]
        print(f"| {row['workload']} | {row['partitions']} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
