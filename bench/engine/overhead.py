"""Per-interval driver overhead: generate + submit + bookkeeping, for a 10-operator graph.

The program's output does nothing with its RDD (no Spark job runs), so what each interval
costs is the engine's own work: building the interval's RDDs through the graph and
submitting the output job. The same program runs on dstream and on pyspark.streaming (same
SparkContext, same batch interval, system clock) and both are measured the same way: the
wall-clock time from the end of the interval (its batch time) to the moment the output
function is called. (pyspark.streaming's own listener reports a total delay of 1-2 ms for
this program while its output function demonstrably runs 15-20 ms after the batch time, so
listener figures are not comparable across the two engines.) For dstream the driver-side
time inside the scheduler (perf_counter) is also reported: job generation, and the
completion bookkeeping.

    .venv/bin/python -m bench.engine.overhead --batches 60 --batch-ms 200
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from bench.common.spark import spark_context
from dstream.scheduler.engine import engine_of

OPS = 10


def build(ssc: Any, sc: Any, sink: Any) -> None:
    """Ten chained operators over a queue stream; the output touches no data."""
    rdd = sc.parallelize(["a b c", "d e"], 2)
    s = ssc.queueStream([], default=rdd)
    s = s.map(lambda x: x)  # 1
    s = s.filter(lambda x: True)  # 2
    s = s.flatMap(str.split)  # 3
    s = s.map(lambda w: (w, 1))  # 4
    s = s.mapValues(lambda v: v + 1)  # 5
    s = s.reduceByKey(lambda a, b: a + b)  # 6
    s = s.filter(lambda kv: kv[1] > 0)  # 7
    s = s.map(lambda kv: kv[0])  # 8
    s = s.transform(lambda r: r)  # 9
    s = s.union(s)  # 10
    s.foreachRDD(lambda t, r: sink(t.timestamp()))


class Latencies:
    """Milliseconds from each batch time to the call of the output function."""

    def __init__(self, wanted: int) -> None:
        self.ms: list[float] = []
        self.done = threading.Event()
        self.wanted = wanted

    def __call__(self, batch_time_s: float) -> None:
        self.ms.append(1000 * (time.time() - batch_time_s))
        if len(self.ms) >= self.wanted:
            self.done.set()


def summarize(system: str, ms: list[float]) -> dict[str, Any]:
    return {
        "system": system,
        "batches": len(ms),
        "median_output_latency_ms": statistics.median(ms),
        "p95_output_latency_ms": sorted(ms)[int(0.95 * (len(ms) - 1))],
    }


def measure_dstream(sc: Any, batches: int, batch_ms: int, warmup: int) -> dict[str, Any]:
    from dstream import StreamingContext

    ssc = StreamingContext(sc, f"{batch_ms}ms")
    sink = Latencies(batches + warmup)
    build(ssc, sc, sink)
    ssc.start()
    sink.done.wait(600)
    stats = engine_of(ssc).scheduler.stats
    ssc.stop(stopSparkContext=False)
    row = summarize("dstream", sink.ms[warmup:])
    row["median_generate_ms"] = 1000 * statistics.median(list(stats.generate_s)[warmup:])
    row["median_complete_ms"] = 1000 * statistics.median(list(stats.complete_s)[warmup:])
    return row


def measure_pyspark(sc: Any, batches: int, batch_ms: int, warmup: int) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        from pyspark.streaming import StreamingContext

        ssc = StreamingContext(sc, batch_ms / 1000)
    sink = Latencies(batches + warmup)
    build(ssc, sc, sink)
    ssc.start()
    sink.done.wait(600)
    ssc.stop(stopSparkContext=False, stopGraceFully=False)
    return summarize("pyspark.streaming", sink.ms[warmup:])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--batches", type=int, default=60)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--batch-ms", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3, help="alternate the systems this many times")
    p.add_argument(
        "--out", default=str(Path(__file__).resolve().parents[1] / "results" / "overhead.json")
    )
    args = p.parse_args()

    sc = spark_context("dstream-bench-overhead")
    rows = []
    for r in range(args.rounds):
        for fn in (measure_dstream, measure_pyspark):
            row = fn(sc, args.batches, args.batch_ms, args.warmup)
            row["round"] = r
            rows.append(row)
            print(json.dumps(row), flush=True)
    sc.stop()

    def med(system: str, key: str) -> float:
        return statistics.median(r[key] for r in rows if r["system"] == system)

    summary = {
        "ops": OPS,
        "batch_ms": args.batch_ms,
        "batches_per_round": args.batches,
        "rounds": args.rounds,
        "dstream_median_output_latency_ms": med("dstream", "median_output_latency_ms"),
        "pyspark_median_output_latency_ms": med("pyspark.streaming", "median_output_latency_ms"),
        "dstream_median_generate_ms": med("dstream", "median_generate_ms"),
        "dstream_median_complete_ms": med("dstream", "median_complete_ms"),
        "rows": rows,
        "when": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }
    summary["ratio_pyspark_over_dstream"] = (
        summary["pyspark_median_output_latency_ms"] / summary["dstream_median_output_latency_ms"]
    )
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(summary, indent=2))
    print(
        f"\n{OPS}-operator graph, {args.batch_ms} ms batches, median of {args.rounds} rounds:\n"
        f"  batch time -> output called: dstream "
        f"{summary['dstream_median_output_latency_ms']:.1f} ms, pyspark.streaming "
        f"{summary['pyspark_median_output_latency_ms']:.1f} ms "
        f"(pyspark.streaming / dstream = {summary['ratio_pyspark_over_dstream']:.2f})\n"
        f"  dstream driver time: generate {summary['dstream_median_generate_ms']:.2f} ms, "
        f"completion bookkeeping {summary['dstream_median_complete_ms']:.2f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
