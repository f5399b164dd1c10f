"""The elastic policy on real executors: one process, one ``local-cluster`` SparkContext
(separate executor JVMs), a keyed running total (updateStateByKey) whose input goes light,
heavy, light, and ``StreamingSettings(elastic=ElasticPolicy(...))`` deciding the executors.
Prints one JSON object.

    python -m testbed.elastic --light 3 --heavy 6 --light-after 3

Each interval is ``--keys`` keys x ``--per-key`` records in ``--partitions`` partitions; a
record of a heavy interval costs ``--cost-ms`` of waiting in its task (a sleep, so the cost
is spread over executors, not over this machine's cores: one executor takes the whole, three
a third). The clock is a ManualClock advanced one interval at a time once the last one
completed, so the policy sees each interval's real processing time and no backlog; the
interval is ``--batch-ms`` (5 s: a light interval's fixed cost here, ~1-1.3 s of jobs,
is then well under the policy's scale_down of 0.4, and a heavy one on two executors,
~5.8 s, well over its scale_up of 0.9). The
oracle is the running total per key, computed here; tests/cluster/test_elastic.py checks
every interval's output against it and that the executors followed the load.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from typing import Any

from dstream.scheduler.engine import engine_of


def interval_records(index: int, args: argparse.Namespace) -> list[tuple[str, int, float]]:
    """Interval ``index`` (1-based): (key, count, seconds to wait) records."""
    heavy = args.light < index <= args.light + args.heavy
    cost = args.cost_ms / 1000 if heavy else 0.0
    return [(f"k{k}", 1 + (index + k) % 3, cost) for k in range(args.keys)] * args.per_key


def oracle(args: argparse.Namespace, intervals: int) -> list[dict[str, int]]:
    """The running total per key after each interval."""
    totals: Counter[str] = Counter()
    out = []
    for i in range(1, intervals + 1):
        for key, count, _ in interval_records(i, args):
            totals[key] += count
        out.append(dict(totals))
    return out


def _cost(record: tuple[str, int, float]) -> tuple[str, int]:
    if record[2]:
        time.sleep(record[2])
    return record[0], record[1]


def _add(new: list[int], old: int | None) -> int:
    return sum(new) + (old or 0)


def run(sc: Any, args: argparse.Namespace, root: str) -> dict[str, Any]:
    from dstream import Duration, ManualClock, StreamingContext, StreamingListener, Time
    from dstream.settings import ElasticPolicy, StreamingSettings
    from testbed.processes import executor_pids_of

    b = args.batch_ms
    policy = ElasticPolicy(
        min_executors=1,
        max_executors=args.executors,
        up_after=args.up_after,
        down_after=args.down_after,
        cooldown=Duration(args.cooldown * b),
    )
    clock = ManualClock(0)
    settings = StreamingSettings(elastic=None if args.no_policy else policy)
    ssc = StreamingContext(sc, Duration(b), clock=clock, settings=settings)
    ssc.checkpoint(os.path.join(root, "checkpoints"))
    intervals = args.light + args.heavy + args.light_after
    queue = [
        sc.parallelize(interval_records(i, args), args.partitions) for i in range(1, intervals + 1)
    ]
    totals = (
        ssc.queueStream(queue, oneAtATime=True)
        .map(_cost)
        .updateStateByKey(_add, numPartitions=args.state_partitions)
    )
    totals.checkpoint(Duration(args.checkpoint_every * b))
    state: Any = totals._node  # the state stream (its partition schedule)
    outputs: dict[int, dict[str, int]] = {}
    partitions: dict[int, int] = {}
    totals.foreachRDD(lambda t, rdd: outputs.__setitem__(t.ms // b, dict(rdd.collect())))
    totals.foreachRDD(lambda t, rdd: partitions.__setitem__(t.ms // b, rdd.getNumPartitions()))
    monitor_live: dict[int, int] = {}
    ids: dict[int, list[str]] = {}  # executor JVMs running after each interval
    seconds: dict[int, float] = {}
    work: dict[int, int] = {}

    class Work(StreamingListener):
        def onBatchCompleted(self, batchCompleted: Any) -> None:
            info = batchCompleted.batchInfo()
            work[info.batch_time.ms // b] = info.work_ms

    ssc.addStreamingListener(Work())
    ssc.start()
    try:
        monitor = ssc.executor_monitor
        for i in range(1, intervals + 1):
            began = time.monotonic()
            clock.advance(b)
            if not ssc.wait_for_batch(Time(i * b), 300):
                raise RuntimeError(f"interval {i} did not complete")
            engine_of(ssc).bus.wait_until_empty(60)  # the policy has seen interval i
            seconds[i] = round(time.monotonic() - began, 2)
            monitor_live[i] = len(monitor.working_executors)
            ids[i] = sorted(executor_pids_of(sc))
            print(
                f"interval {i}: {seconds[i]} s (jobs {work.get(i)} ms), "
                f"{monitor_live[i]} executors, {partitions.get(i)} state partitions, "
                f"JVMs of {ids[i]}",
                file=sys.stderr,
                flush=True,
            )
        ssc.awaitTerminationOrTimeout(0)  # raises if an interval failed
        actions = [
            {"kind": a.kind, "executor": a.executor, "target": a.target, "reason": a.reason}
            for a in monitor.actions
        ]
    finally:
        ssc.stop(stopSparkContext=False)
    expected = oracle(args, intervals)
    return {
        "intervals": intervals,
        "phases": {"light": args.light, "heavy": args.heavy, "light_after": args.light_after},
        "wrong": [i for i in range(1, intervals + 1) if outputs.get(i) != expected[i - 1]],
        "actions": actions,
        "live": {str(i): n for i, n in monitor_live.items()},
        "jvms": {str(i): n for i, n in ids.items()},
        "partitions": {str(i): n for i, n in partitions.items()},
        "seconds": {str(i): s for i, s in seconds.items()},
        "work_ms": {str(i): w for i, w in work.items()},
        "schedule": state.schedule.steps(),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--light", type=int, default=3, help="light intervals first")
    p.add_argument("--heavy", type=int, default=6, help="then heavy intervals")
    p.add_argument("--light-after", type=int, default=3, help="then light intervals again")
    p.add_argument("--batch-ms", type=int, default=5000, help="the batch interval")
    p.add_argument("--keys", type=int, default=12)
    p.add_argument("--per-key", type=int, default=5, help="records per key per interval")
    p.add_argument("--partitions", type=int, default=3, help="partitions of each interval")
    p.add_argument("--state-partitions", type=int, default=4)
    p.add_argument("--cost-ms", type=float, default=150, help="wait per heavy record")
    p.add_argument("--cooldown", type=int, default=1, help="intervals between two steps")
    p.add_argument("--up-after", type=int, default=1, help="loaded intervals before a step up")
    p.add_argument("--down-after", type=int, default=2, help="idle intervals before a step down")
    p.add_argument("--checkpoint-every", type=int, default=6, help="intervals between checkpoints")
    p.add_argument("--executors", type=int, default=3, help="workers (and max_executors)")
    p.add_argument(
        "--no-policy",
        action="store_true",
        help="no elastic policy: the executors stay as started (bench/engine/elastic.py's peer)",
    )
    p.add_argument(
        "--decommission",
        action="store_true",
        help="executors removed are decommissioned (their blocks move) instead of killed",
    )
    p.add_argument("--executor-mb", type=int, default=640)
    args = p.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkContext

    from testbed.faults import cluster_conf, wait_for_executors

    master = f"local-cluster[{args.executors},1,{args.executor_mb}]"
    conf = cluster_conf(
        master,
        "dstream-elastic",
        args.executor_mb,
        args.partitions,
        decommission=args.decommission,
    )
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    try:
        wait_for_executors(sc, args.executors)
        with tempfile.TemporaryDirectory(prefix="dstream-elastic-") as root:
            started = time.monotonic()
            result = run(sc, args, root)
            result["seconds_total"] = round(time.monotonic() - started, 1)
        print(json.dumps(result), flush=True)
    finally:
        sc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
