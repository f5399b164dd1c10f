"""Where an interval of the quick start's program goes (issue 18's breakdown): its Spark
stages and tasks, the tasks' own time by kind, the stages' wall time, and what is left for
the driver (building the interval's RDDs, submitting and completing its jobs).

The program is `make run`'s (`apps/wordcount.py`: a rate source, word counts over a 30 s
window with the inverse, the top 5 taken each interval), local[2], on a ManualClock
advanced one interval at a time once the previous one completed (so no interval waits for
another). Task events come from the engine's executor monitor (the JVM shim's listener).
The first ``--warmup`` intervals are left out.

    PYTHONPATH=. .venv/bin/python bench/interval_breakdown.py --intervals 45
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "apps"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--intervals", type=int, default=45)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--rate", type=int, default=2000, help="records per second")
    p.add_argument("--out", type=Path, default=HERE / "results" / "interval_breakdown.json")
    args = p.parse_args(argv)

    from pyspark import SparkContext
    from wordcount import print_top, windowed_counts

    from dstream import Duration, ManualClock, StreamingContext, Time
    from dstream.scheduler.shim import StageCompleted, StageSubmitted, TaskEnd
    from dstream.sparkconf import recommended_conf

    sc = SparkContext(conf=recommended_conf("local[2]", "dstream-interval-breakdown"))
    sc.setLogLevel("ERROR")
    clock = ManualClock(0)
    ssc = StreamingContext(sc, Duration(1000), clock=clock)
    windowed_counts(ssc.rateStream(args.rate), 30).foreachRDD(print_top(5))
    ssc.start()
    feed = ssc.executor_monitor.subscribe()
    wall: dict[int, float] = {}
    with contextlib.redirect_stdout(io.StringIO()):  # the top words of each interval
        for k in range(1, args.intervals + 1):
            began = time.perf_counter()
            clock.advance(1000)
            if not ssc.wait_for_batch(Time(k * 1000), 120):
                raise SystemExit(f"interval {k} did not complete")
            wall[k * 1000] = (time.perf_counter() - began) * 1000
    ssc.executor_monitor.poll_now()
    events = feed.poll()
    stats = ssc._scheduler.stats  # the driver's own time per interval (as bench/overhead.py)
    ssc.stop(stopSparkContext=True)

    per: dict[int, dict[str, Any]] = {}
    for e in events:
        group = getattr(e, "job_group", None) or ""
        tail = group.rsplit("-", 1)[-1]
        if not tail.isdigit():
            continue
        d = per.setdefault(int(tail), {"stages": {}, "wall": {}, "tasks": {}})
        if isinstance(e, StageSubmitted):
            d["stages"][e.stage_id] = e.name.split(" at ")[0]
        elif isinstance(e, StageCompleted) and e.submission_time and e.completion_time:
            d["wall"][e.stage_id] = e.completion_time - e.submission_time
        elif isinstance(e, TaskEnd) and e.successful:
            d["tasks"].setdefault(e.task_type, []).append(e.finish_time - e.launch_time)
    kept = [ms for ms in sorted(wall) if ms > args.warmup * 1000 and ms in per]

    def med(xs: list[float]) -> float:
        return round(statistics.median(xs), 1)

    interval_ms = med([wall[ms] for ms in kept])
    stages_ms = med([sum(per[ms]["wall"].values()) for ms in kept])
    report = {
        "intervals": len(kept),
        "rate": args.rate,
        "interval_ms": interval_ms,
        "stages_wall_ms": stages_ms,
        "outside_stages_ms": round(interval_ms - stages_ms, 1),
        "stages_per_interval": med([len(per[ms]["stages"]) for ms in kept]),
        "stage_names": sorted(set(per[kept[-1]]["stages"].values())),
        "tasks_per_interval": med([sum(map(len, per[ms]["tasks"].values())) for ms in kept]),
        "task_ms_by_kind": {
            kind: med([x for ms in kept for x in per[ms]["tasks"].get(kind, [])])
            for kind in ("ShuffleMapTask", "ResultTask")
        },
        "driver_generate_ms": med([s * 1000 for s in list(stats.generate_s)[args.warmup :]]),
        "driver_complete_ms": med([s * 1000 for s in list(stats.complete_s)[args.warmup :]]),
    }
    print(json.dumps(report, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
