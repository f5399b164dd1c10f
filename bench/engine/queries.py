"""Do live queries stall the stream? (issue 15)

One program (a rate source, running word counts with updateStateByKey, a 30 s window with
an inverse) runs for --seconds without queries, then for --seconds with a thread that runs
queries in a loop on its live state (snapshot().count(), lookup(), a SQL view), in the same
SparkContext and run. --think makes the loop pause that many seconds after each round of
three queries (a person at the shell); 0 runs them back to back. Reports each phase's
median and p95 processing time and scheduling delay, and their ratio. Writes
bench/results/queries.json.

    .venv/bin/python -m bench.engine.queries --rate 1000 --seconds 60
    .venv/bin/python -m bench.engine.queries --rate 1000 --seconds 60 --think 2
    .venv/bin/python -m bench.engine.queries --smoke
"""

from __future__ import annotations

import argparse
import json
import operator
import statistics
import threading
from pathlib import Path
from typing import Any

from bench.common.spark import spark_context
from dstream import StreamingContext, StreamingListener


class Delays(StreamingListener):
    def __init__(self) -> None:
        self.rows: list[tuple[str, int, int]] = []
        self.phase = "warmup"

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        info = batchCompleted.batchInfo()
        self.rows.append((self.phase, info.processingDelay(), info.schedulingDelay()))


def summary(values: list[int]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median": statistics.median(ordered) if ordered else float("nan"),
        "p95": ordered[int(0.95 * (len(ordered) - 1))] if ordered else float("nan"),
        "n": len(ordered),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rate", type=int, default=1_000)
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--think", type=float, default=0.0, help="pause after each query round")
    p.add_argument("--warmup", type=float, default=35, help="the window fills first")
    p.add_argument("--smoke", action="store_true", help="tiny and short: check it runs")
    p.add_argument(
        "--out", default=str(Path(__file__).resolve().parents[1] / "results" / "queries.json")
    )
    args = p.parse_args()
    if args.smoke:
        args.rate, args.seconds, args.warmup = 500, 4, 2
    sc = spark_context("dstream-bench-queries")
    ssc = StreamingContext(sc, 1)
    pairs = ssc.rateStream(args.rate).flatMap(str.split).map(lambda w: (w, 1))
    totals = pairs.updateStateByKey(lambda new, old: sum(new) + (old or 0)).setName("totals")
    window = pairs.reduceByKeyAndWindow(operator.add, operator.sub, 30).setName("window")
    totals.foreachRDD(lambda rdd: rdd.count())  # every interval computes both states
    window.foreachRDD(lambda rdd: rdd.count())
    delays = Delays()
    ssc.addStreamingListener(delays)
    ssc.start()
    stop = threading.Event()
    queries = [0]

    def ask() -> None:
        from pyspark.sql import SparkSession

        spark = SparkSession.builder.getOrCreate()
        window.createOrReplaceTempView("window")
        while not stop.is_set():
            totals.snapshot().count()
            totals.lookup("the")
            spark.sql("select count(*), sum(value) from window").collect()
            queries[0] += 3
            stop.wait(args.think)

    pause = threading.Event()
    pause.wait(args.warmup)
    delays.phase = "without queries"
    pause.wait(args.seconds)
    delays.phase = "with queries"
    asker = threading.Thread(target=ask, daemon=True)
    asker.start()
    pause.wait(args.seconds)
    stop.set()
    asker.join(120)
    delays.phase = "done"
    ssc.stop(stopSparkContext=True, stopGraceFully=True)
    result: dict[str, Any] = {
        "rate": args.rate,
        "seconds": args.seconds,
        "think_s": args.think,
        "queries": queries[0],
    }
    for phase in ("without queries", "with queries"):
        rows = [r for r in delays.rows if r[0] == phase]
        result[phase] = {
            "processing_ms": summary([r[1] for r in rows]),
            "scheduling_delay_ms": summary([r[2] for r in rows]),
        }
    base = result["without queries"]["processing_ms"]["median"]
    result["processing_ratio"] = result["with queries"]["processing_ms"]["median"] / base
    print(json.dumps(result, indent=2))
    if not args.smoke:
        if args.think:
            out = Path(args.out)
            args.out = str(out.with_name(f"{out.stem}-think{args.think:g}{out.suffix}"))
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
