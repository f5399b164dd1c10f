"""One Spark process of the traffic benchmark (``bench/paper/traffic.py`` starts it): the
streaming EM program on ``local-cluster[N,1,MB]`` (separate executor JVMs), driven by a
ManualClock, intervals back to back. Prints one JSON object.

- ``--runs plain``: one run; per interval its processing time and how many observations
  it E-stepped (scaling).
- ``--runs plain,kill@I``: then a second run on the same cluster in which one executor JVM
  is killed (SIGKILL) ``--kill-delay`` seconds after interval I started; per interval a
  digest of the estimates, to compare with the first run (recovery).

    python bench/paper/traffic_spark.py --data DIR --executors 2 --samples 300 --intervals 12
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from testbed.processes import executor_pids_of

APPS = Path(__file__).resolve().parents[2] / "apps"
sys.path.insert(0, str(APPS))

H = 3_600_000


def digest(records: list[Any]) -> str:
    return hashlib.sha256(repr(sorted(records)).encode()).hexdigest()[:16]


def run(sc: Any, args: argparse.Namespace, kill_at: int | None) -> dict[str, Any]:
    import traffic_em
    from traffic.em import EMSettings, Priors
    from traffic.estep import SamplerSettings
    from traffic.generate import intervals, load_city, read_observations

    from dstream import Duration, ManualClock, StreamingContext, StreamingListener, Time
    from testbed.faults import wait_for_executors

    wait_for_executors(sc, args.executors)
    city, traffic = load_city(args.data)
    settings = EMSettings(
        sampler=SamplerSettings(samples=args.samples, chains=args.chains, burn_in=args.burn_in),
        iterations=args.iterations,
        window_ms=args.window_ms,
        half_life_ms=args.window_ms // 2,
        history_days=args.history_days,
    )
    batch = args.batch_ms
    today = read_observations(os.path.join(args.data, "today.txt"))
    start = args.start_ms or traffic.start_ms + settings.window_ms
    groups = [(t, o) for t, o in intervals(today, batch) if t > start - settings.window_ms]
    groups = groups[: args.intervals]
    clock = ManualClock(groups[0][0] - batch)
    ssc = StreamingContext(sc, Duration(batch), clock=clock)
    lines = ssc.queueStream([[o.format() for o in obs] for _, obs in groups], default=[])
    history = None
    if settings.history_days:
        history = traffic_em.load_history(
            sc, os.path.join(args.data, "history"), settings.history_days
        )
    estimates = traffic_em.estimates_stream(
        ssc,
        lines,
        Priors(city, settings),
        settings,
        batch_ms=batch,
        history=history,
        partitions=args.partitions,
    )
    digests: dict[int, str] = {}
    sizes: dict[int, int] = {}
    estimates.foreachRDD(lambda t, rdd: digests.__setitem__(t.ms, digest(rdd.collect())))
    killed: list[str] = []

    def kill() -> None:
        pids = executor_pids_of(sc)
        victim = sorted(pids, key=int)[0]
        os.kill(pids[victim], signal.SIGKILL)
        killed.append(victim)

    class Faults(StreamingListener):
        def onBatchStarted(self, batchStarted: Any) -> None:
            if (
                kill_at is not None
                and batchStarted.batchInfo().batchTime().ms == groups[kill_at - 1][0]
            ):
                threading.Timer(args.kill_delay, kill).start()

    ssc.addStreamingListener(Faults())
    processing: dict[int, int] = {}
    ssc.start()
    try:
        for t, _ in groups:
            began = time.perf_counter()
            clock.advance(batch)
            if not ssc.wait_for_batch(Time(t), 1800):
                raise RuntimeError(f"interval {t} did not complete")
            processing[t] = round((time.perf_counter() - began) * 1000)
        ssc.awaitTerminationOrTimeout(0)  # raises if an interval failed
    finally:
        ssc.stop(stopSparkContext=False)
    # What each interval E-stepped: its window plus the history of its time of day.
    from traffic.em import OnlineEM

    counter = OnlineEM(city, settings, _history(args.data, settings.history_days))
    for t, obs in groups:
        counter.slide(t, obs)
        sizes[t] = len(counter.window_data(t))
    return {
        "kill_at": kill_at,
        "killed": killed,
        "processing_ms": processing,
        "arrivals": {t: len(obs) for t, obs in groups},
        "estepped": sizes,
        "digests": digests,
    }


def _history(data: str, days: int) -> list[Any]:
    from traffic.generate import read_observations

    return [
        o
        for d in range(1, days + 1)
        for o in read_observations(os.path.join(data, "history", f"day-{d:02d}.txt"))
    ]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--data", required=True)
    p.add_argument("--executors", type=int, default=2)
    p.add_argument("--executor-mb", type=int, default=1536)
    p.add_argument("--samples", type=int, default=300)
    p.add_argument("--chains", type=int, default=30)
    p.add_argument("--burn-in", type=int, default=5)
    p.add_argument("--iterations", type=int, default=2)
    p.add_argument("--window-ms", type=int, default=120_000)
    p.add_argument("--history-days", type=int, default=10)
    p.add_argument("--batch-ms", type=int, default=5000)
    p.add_argument("--start-ms", type=int, default=0)
    p.add_argument("--intervals", type=int, default=12)
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument("--runs", default="plain", help="plain, or plain,kill@I")
    p.add_argument("--kill-delay", type=float, default=1.0)
    args = p.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkContext

    from dstream.sparkconf import recommended_conf

    master = f"local-cluster[{args.executors},1,{args.executor_mb}]"
    conf = recommended_conf(master, "traffic-bench").set("spark.ui.enabled", "false")
    conf.set("spark.executorEnv.PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    results = []
    try:
        for spec in args.runs.split(","):
            kill_at = int(spec.split("@")[1]) if spec.startswith("kill@") else None
            results.append(run(sc, args, kill_at))
    finally:
        sc.stop()
    print(json.dumps({"executors": args.executors, "samples": args.samples, "runs": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
