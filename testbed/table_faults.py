"""An executor JVM killed with SIGKILL in the middle of an interval's table write, for real:
one process, one ``local-cluster`` SparkContext (separate executor JVMs), the rate source's
lines appended to a table (``saveToTable``) and their words' running totals upserted into
another. Prints one JSON object.

    python -m testbed.table_faults --root /tmp/run --intervals 6 --kill-at 3

Interval ``--kill-at``'s first write task of the lines table yields half its rows to the
Parquet writer and then holds; the driver waits until that task attempt's part file exists
in the interval's hidden directory (the write is open) and kills the executor whose process
tree holds the task's Python worker. Spark runs the task again on the other executor, the
job commits (Hadoop's committer drops the killed attempt's files with ``_temporary``) and
the interval is renamed into the table once. The test (tests/cluster/test_table_executor_kill.py)
reads both tables with Spark SQL and compares them, interval by interval, with the rate
source's own lines (:func:`testbed.faults.interval_lines`).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from operator import add
from typing import Any

B = 1000  # ms per interval
SEED = 8


def hold_midway(at_ms: int, marks: str, hold_s: float) -> Any:
    """A transform that, at interval ``at_ms``, makes each partition's first attempt yield
    half its rows, mark itself (its Python worker's pid) and hold for up to ``hold_s``."""
    from pyspark import TaskContext

    def transform(time: Any, rdd: Any) -> Any:
        if time.ms != at_ms:
            return rdd

        def held(records: Any) -> Any:
            items = list(records)
            half = len(items) // 2
            yield from items[:half]
            task = TaskContext.get()
            if task is not None and task.attemptNumber() == 0 and task.partitionId() == 0:
                with open(os.path.join(marks, str(os.getpid())), "w") as f:
                    f.write("")
                threading.Event().wait(hold_s)  # the killer's window; it ends this JVM
            yield from items[half:]

        return rdd.mapPartitions(held)

    return transform


def open_part_files(table: str, at_ms: int) -> list[str]:
    """The part files partition 0's task attempt is writing (not yet committed by the
    task: under ``_temporary/0/_temporary/attempt_*_m_000000_*``) in interval ``at_ms``'s
    hidden directory."""
    found = []
    for name in os.listdir(table):
        if name.startswith(f".batch_ms={at_ms}.tmp-"):
            for d, _, files in os.walk(os.path.join(table, name)):
                if "_m_000000_" in os.path.basename(d) and "attempt_" in os.path.basename(d):
                    found += [os.path.join(d, f) for f in files if f.startswith("part-")]
    return found


def run(sc: Any, args: argparse.Namespace) -> dict[str, Any]:
    from dstream import Duration, ManualClock, StreamingContext, Time
    from testbed.processes import executor_pids, process_tree

    at_ms = args.kill_at * B
    clock = ManualClock(0)
    ssc = StreamingContext(sc, Duration(B), clock=clock)
    ssc.checkpoint(os.path.join(args.root, "ckpt"))
    marks = os.path.join(args.root, "marks")
    os.makedirs(marks)
    lines_table = os.path.join(args.root, "lines")
    lines = ssc.rateStream(args.rate, numPartitions=args.partitions, seed=SEED)
    lines.transform(hold_midway(at_ms, marks, args.hold_s)).saveToTable(lines_table, "line string")
    words = lines.flatMap(str.split).map(lambda w: (w, 1)).reduceByKey(add)
    totals = words.updateStateByKey(lambda new, old: (old or 0) + sum(new), args.partitions)
    totals.saveToTable(
        os.path.join(args.root, "totals"), "word string, count long", mode="upsert", key="word"
    )
    killed: list[str] = []
    part_files: list[str] = []

    def killer() -> None:
        pause = threading.Event()
        while not (found := os.listdir(marks)):
            pause.wait(0.02)  # real time: the write task marks itself
        worker = int(found[0])
        for _ in range(1500):  # the attempt's part file: the Parquet writer is open
            part_files[:] = open_part_files(lines_table, at_ms)
            if part_files:
                break
            pause.wait(0.02)
        for executor_id, pid in executor_pids(sc.applicationId).items():
            if worker in process_tree(pid):
                os.kill(pid, signal.SIGKILL)
                killed.append(executor_id)
                return

    threading.Thread(target=killer, daemon=True).start()
    ssc.start()
    try:
        for i in range(1, args.intervals + 1):
            clock.advance(B)
            began = time.monotonic()
            if not ssc.wait_for_batch(Time(i * B), 300):
                raise RuntimeError(f"interval {i} did not complete")
            print(
                f"interval {i}: {time.monotonic() - began:.1f} s, killed {killed}",
                file=sys.stderr,
                flush=True,
            )
        ssc.awaitTerminationOrTimeout(0)  # raises if an interval failed
    finally:
        ssc.stop(stopSparkContext=False)
    return {
        "killed": killed,
        "part_files_at_kill": part_files,
        "executors_after": sorted(executor_pids(sc.applicationId), key=int),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--root", required=True, help="an empty directory: tables, checkpoints")
    p.add_argument("--intervals", type=int, default=6)
    p.add_argument("--kill-at", type=int, default=3, help="the interval whose write is cut")
    p.add_argument("--rate", type=int, default=400, help="records per second")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--hold-s", type=float, default=60.0, help="how long the write task holds")
    p.add_argument("--executors", type=int, default=2)
    p.add_argument("--executor-mb", type=int, default=1024)
    args = p.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkContext

    from testbed.faults import cluster_conf, wait_for_executors

    master = f"local-cluster[{args.executors},1,{args.executor_mb}]"
    conf = cluster_conf(master, "dstream-table-faults", args.executor_mb, args.partitions)
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    started = time.monotonic()
    try:
        wait_for_executors(sc, args.executors)
        result = run(sc, args)
    finally:
        sc.stop()
    result["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
