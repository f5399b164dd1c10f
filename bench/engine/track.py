"""Cost per interval of track() as idle keys accumulate, next to updateStateByKey.

A session tracker (the paper's Sec. 3.3 example: a key's state lives until it sends "exit"
or is idle for the timeout) first receives N distinct idle keys in one interval (N = 0, 100k,
1M), then 1,000 events per interval for keys of a 5,000-key active pool. Each interval's
output is the session count. The timeout is long, so the idle keys stay.

track() keeps each state partition as a snapshot file plus the keys changed since, so an
interval should cost the same whatever N is. updateStateByKey (PySpark's operator, which
calls the update function for every key every interval) runs the same program for contrast.
Intervals run back to back on a ManualClock; the cost of one is the wall time from
advancing the clock to the batch's completion. track()'s snapshot compaction (every 10
intervals, asynchronous) runs during the measured intervals, as it would in production.

    .venv/bin/python -m bench.engine.track --idle 0 100000 1000000 --warmup 15 --measure 20
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from bench.common.spark import spark_context

ACTIVE_POOL = 5000
ACTIVE_PER_INTERVAL = 1000


def events_rdd(sc: Any, interval: int, idle: int) -> Any:
    if interval == 1:
        return sc.parallelize(range(idle), 8).map(lambda i: (f"idle{i}", "join"))
    return sc.parallelize(range(ACTIVE_PER_INTERVAL), 2).map(
        lambda j, t=interval: (f"act{(t * 7919 + j) % ACTIVE_POOL}", "play")
    )


def session_update(new: list[str], old: int | None) -> int | None:
    state = old
    for ev in new:
        state = None if ev == "exit" else 1
    return state


def run(sc: Any, operator_name: str, idle: int, warmup: int, measure: int) -> dict[str, Any]:
    from dstream import Duration, ManualClock, StreamingContext, Time

    clock = ManualClock(0)
    ssc = StreamingContext(sc, Duration(1000), clock=clock)
    total = 1 + warmup + measure
    events = ssc.queueStream([events_rdd(sc, i, idle) for i in range(1, total + 1)])
    if operator_name == "track":
        sessions = events.track(
            lambda key, ev: 1, lambda key, st, ev: None if ev == "exit" else 1, "1h", 2
        )
    else:
        sessions = events.updateStateByKey(session_update, 2)
    counts: list[int] = []
    sessions.count().foreachRDD(lambda rdd: counts.extend(rdd.collect()))
    ssc.start()
    began = time.perf_counter()
    clock.advance(1000)
    ssc.wait_for_batch(Time(1000), 3600)
    load_s = time.perf_counter() - began
    costs = []
    for i in range(2, total + 1):
        began = time.perf_counter()
        clock.advance(1000)
        if not ssc.wait_for_batch(Time(i * 1000), 3600):
            raise RuntimeError(f"batch {i} did not complete")
        if i > 1 + warmup:
            costs.append(time.perf_counter() - began)
    ssc.stop(stopSparkContext=False)
    active = {
        (t * 7919 + j) % ACTIVE_POOL
        for t in range(2, total + 1)
        for j in range(ACTIVE_PER_INTERVAL)
    }
    expected_last = idle + len(active)
    return {
        "operator": operator_name,
        "idle_keys": idle,
        "load_s": load_s,
        "median_ms": 1000 * statistics.median(costs),
        "p90_ms": 1000 * sorted(costs)[int(0.9 * (len(costs) - 1))],
        "intervals": len(costs),
        "sessions_at_end": counts[-1],
        "sessions_expected": expected_last,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--idle", type=int, nargs="+", default=[0, 100_000, 1_000_000])
    p.add_argument("--measure", type=int, default=20)
    p.add_argument(
        "--warmup",
        type=int,
        default=15,
        help="track() intervals before measuring: the idle keys reach a snapshot (every 10)",
    )
    p.add_argument("--update-state-measure", type=int, default=5)
    p.add_argument(
        "--out", default=str(Path(__file__).resolve().parents[1] / "results" / "track.json")
    )
    args = p.parse_args()
    sc = spark_context("dstream-bench-track", spark__driver__memory="4g")
    rows = []
    for idle in args.idle:
        for name, warmup, measure in (
            ("track", args.warmup, args.measure),
            ("updateStateByKey", 1, args.update_state_measure),
        ):
            row = run(sc, name, idle, warmup, measure)
            rows.append(row)
            print(json.dumps(row), flush=True)
    sc.stop()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"rows": rows}, indent=2))
    print("\nmedian cost per interval (ms), 1,000 active keys per interval:")
    print("idle keys      track   updateStateByKey")
    for idle in args.idle:
        t = next(r for r in rows if r["idle_keys"] == idle and r["operator"] == "track")
        u = next(r for r in rows if r["idle_keys"] == idle and r["operator"] != "track")
        print(f"{idle:9d}   {t['median_ms']:8.0f}   {u['median_ms']:16.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
