"""What state checkpoints cost an interval: dstream's asynchronous ones against none, and
against pyspark.streaming's synchronous ones, for the same program in the same run.

The program counts words over a sliding 30 s window with an inverse function (a state
stream, checkpointed every 10 intervals by default in both engines) over a directory that
bench/common/generator.py fills with 100-byte records at a steady rate. Each configuration runs on
the system clock for --seconds; the figure is the per-interval processing time its own
StreamingListener reports, after a warm-up. pyspark.streaming requires checkpoints for this
program, so it is shown with them only, split into the intervals that wrote one and those
that did not.

    .venv/bin/python -m bench.engine.checkpoint --rate 3000 --seconds 70
"""

from __future__ import annotations

import argparse
import json
import operator
import shutil
import statistics
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

from bench.common.generator import Generator
from bench.common.spark import spark_context
from dstream import Time

WARMUP = 12


def program(ssc: Any, directory: str) -> Any:
    lines = ssc.textFileStream(directory)
    pairs = lines.flatMap(lambda line: line.split()).map(lambda w: (w, 1))
    counts = pairs.reduceByKeyAndWindow(operator.add, operator.sub, 30, 1)
    counts.foreachRDD(lambda rdd: rdd.count())
    return counts


def measure(sc: Any, system: str, checkpoints: bool, rate: int, seconds: float) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="dstream-bench-ckpt-"))
    (work / "in").mkdir()
    delays: list[tuple[int, int]] = []  # (batch ms, processing ms)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        if system == "dstream":
            from dstream import StreamingContext, StreamingListener
        else:
            from pyspark.streaming import StreamingContext, StreamingListener

    class Recorder(StreamingListener):  # type: ignore[misc, valid-type]
        def onBatchCompleted(self, batchCompleted: Any) -> None:
            info = batchCompleted.batchInfo()
            batch = info.batchTime()
            ms = batch.ms if isinstance(batch, Time) else batch.milliseconds()
            delays.append((ms, int(info.processingDelay())))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        ssc = StreamingContext(sc, 1)
    ssc.checkpoint(str(work / "ckpt"))
    counts = program(ssc, str(work / "in"))
    if not checkpoints:
        counts.checkpoint(3600)  # never within the run
    ssc.addStreamingListener(Recorder())
    gen = Generator(str(work / "in"), rate).start()
    ssc.start()
    threading.Event().wait(seconds)
    ssc.stop(stopSparkContext=False, stopGraceFully=False)
    gen.stop()
    shutil.rmtree(work, ignore_errors=True)
    measured = sorted(delays)[WARMUP:]
    zero = sorted(delays)[0][0] - 1000
    with_ckpt = [d for t, d in measured if (t - zero) % 10_000 == 0]
    without = [d for t, d in measured if (t - zero) % 10_000 != 0]
    all_delays = [d for _, d in measured]
    return {
        "system": system,
        "checkpoints": checkpoints,
        "intervals": len(all_delays),
        "median_ms": statistics.median(all_delays),
        "p90_ms": sorted(all_delays)[int(0.9 * (len(all_delays) - 1))],
        "median_checkpoint_intervals_ms": statistics.median(with_ckpt) if with_ckpt else None,
        "median_other_intervals_ms": statistics.median(without) if without else None,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rate", type=int, default=3000)
    p.add_argument("--seconds", type=float, default=70)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument(
        "--out", default=str(Path(__file__).resolve().parents[1] / "results" / "checkpoint.json")
    )
    args = p.parse_args()
    sc = spark_context("dstream-bench-checkpoint")
    rows = []
    for _ in range(args.rounds):
        for system, ckpt in (("dstream", True), ("dstream", False), ("pyspark.streaming", True)):
            row = measure(sc, system, ckpt, args.rate, args.seconds)
            rows.append(row)
            print(json.dumps(row), flush=True)
    sc.stop()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"rate": args.rate, "rows": rows}, indent=2))

    def med(system: str, ckpt: bool) -> float:
        return statistics.median(
            r["median_ms"] for r in rows if r["system"] == system and r["checkpoints"] == ckpt
        )

    on, off, theirs = med("dstream", True), med("dstream", False), med("pyspark.streaming", True)
    print(
        f"\nmedian processing time per interval, {args.rate} records/s, 30 s window:\n"
        f"  dstream, checkpoint every 10 intervals (asynchronous)  {on:.0f} ms\n"
        f"  dstream, no checkpoint                                 {off:.0f} ms  "
        f"(with / without = {on / off:.2f})\n"
        f"  pyspark.streaming, checkpoint every 10 intervals       {theirs:.0f} ms  "
        f"(pyspark.streaming / dstream = {theirs / on:.2f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
