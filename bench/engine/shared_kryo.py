"""A Kryo per task against one Kryo pool per JVM, for PySpark shuffles (the JVM shim's
``io.dstream.shim.shuffle.SharedKryo``, which the engine gives every shuffle it runs).

Each run is a process of its own with fresh executor JVMs (``local-cluster[2,1,1024]``, the
tests' JVM options): ``--warmup`` jobs, then ``--jobs`` jobs of a 4-partition
``reduceByKey`` of 4,000 records (8 tasks a job: 4 map, 4 reduce), either left to Spark (a
``KryoSerializer`` inside every task, so every task builds a Kryo) or given the shared
serializer with :func:`dstream.jvm.share_kryo`. Reported: CPU-seconds of the executor JVMs,
of the driver JVM and of the Python processes over the measured jobs (``/proc``), and the
wall time; runs alternate on/off ``--pairs`` times, medians and the ratio printed last
(and written with every run to ``bench/results/shared_kryo.json``).

    .venv/bin/python -m bench.engine.shared_kryo --pairs 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from operator import add
from pathlib import Path
from typing import Any

TESTS_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
RESULTS = Path(__file__).resolve().parents[1] / "results" / "shared_kryo.json"


def one_run(shared: bool, warmup: int, jobs: int) -> dict[str, Any]:
    from pyspark import SparkConf, SparkContext

    from bench.engine.interval_cpu import cpu_by_kind
    from dstream.jvm import share_kryo

    conf = SparkConf().setMaster("local-cluster[2,1,1024]").setAppName("shared-kryo")
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")

    def job() -> int:
        rdd = sc.parallelize(range(4000), 4).map(lambda x: (x % 50, 1)).reduceByKey(add, 4)
        if shared:
            share_kryo(rdd)
        return rdd.count()

    try:
        for _ in range(warmup):
            job()
        before, started = cpu_by_kind(os.getpid()), time.perf_counter()
        for _ in range(jobs):
            assert job() == 50
        after, wall = cpu_by_kind(os.getpid()), time.perf_counter() - started
    finally:
        sc.stop()
    cpu = {k: round(after[k] - before.get(k, 0.0), 2) for k in after}
    return {"shared": shared, "cpu_s": cpu, "wall_s": round(wall, 1)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--pairs", type=int, default=3, help="off/on runs, at least 1")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--jobs", type=int, default=150)
    p.add_argument("--one", choices=["on", "off"], help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.pairs < 1:
        p.error(f"--pairs {args.pairs}: at least 1 (an off run and an on run)")
    if args.one:
        print(json.dumps(one_run(args.one == "on", args.warmup, args.jobs)))
        return 0
    env = {**os.environ, "JDK_JAVA_OPTIONS": TESTS_JVM}
    runs: list[dict[str, Any]] = []
    for _ in range(args.pairs):
        for mode in ("off", "on"):
            cmd = [sys.executable, "-m", "bench.engine.shared_kryo", "--one", mode]
            cmd += ["--warmup", str(args.warmup), "--jobs", str(args.jobs)]
            out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
            print(json.dumps(runs[-1]), flush=True)

    def median(shared: bool, key: str) -> float:
        mine = [r for r in runs if r["shared"] is shared]
        return statistics.median(r["wall_s"] if key == "wall" else r["cpu_s"][key] for r in mine)

    summary = {}
    for key in ("executor JVMs", "driver JVM", "wall"):
        off, on = median(False, key), median(True, key)
        summary[key] = {"per task": off, "shared": on, "ratio": round(on / off, 3)}
    report = {"medians": summary, "runs": runs, "at": time.strftime("%Y-%m-%dT%H:%M:%S")}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["medians"], indent=2))
    print(f"written to {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
