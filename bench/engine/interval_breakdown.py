"""Where an interval goes (issue 18's breakdown): its Spark stages and tasks, the tasks'
own time by kind and by part (Spark's task metrics: deserializing the task, running it,
serializing its result, GC, the scheduler's delay around it, fetching its result), the
stages' wall time, and what is left for the driver (building the interval's RDDs,
submitting and completing its jobs).

Programs (``--program``):

- ``quickstart``: `make run`'s (`apps/wordcount.py`: a rate source at ``--rate``, word
  counts over a 30 s window with the inverse, the top 5 taken each interval).
- ``grep`` and ``wordcount``: the throughput benchmark's columnar programs
  (bench/paper/throughput_systems.py) on one file of ``--rate`` 100-byte records per interval
  (bench/paper/throughput_input.py's records), the light loads of issue 18's goal 1.

local[2], on a ManualClock advanced one interval at a time once the previous one completed
(so no interval waits for another). Task events come from the engine's executor monitor
(the JVM shim's listener), task metrics from Spark's REST API. The first ``--warmup``
intervals are left out.

    .venv/bin/python -m bench.engine.interval_breakdown --intervals 45
    .venv/bin/python -m bench.engine.interval_breakdown --program wordcount --rate 50000
    .venv/bin/python -m bench.engine.interval_breakdown --program wordcount --rate 50000 \
        --interval-ms 250 --window-s 30 --intervals 160 --warmup 130

``--interval-ms`` and ``--window-s`` change the interval and the window (default 1000 ms,
30 s): at 250 ms a 30 s window holds 120 intervals, at 1 s 30.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dstream.scheduler.engine import engine_of

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "apps"))

T0 = 1_700_000_000_000  # the ManualClock's start (epoch ms), so files' times fit intervals
METRICS = (  # Spark's task metrics (ms) reported per task kind
    "executorDeserializeTime",
    "executorRunTime",
    "resultSerializationTime",
    "jvmGcTime",
    "schedulerDelay",
    "gettingResultTime",
)


def program(args: argparse.Namespace, ssc: Any, work: Path) -> Callable[[int], None]:
    """Build ``args.program`` on ``ssc``; returns what puts interval k's input in place."""
    if args.program == "quickstart":
        from wordcount import print_top, windowed_counts

        windowed_counts(ssc.rateStream(args.rate), args.window_s).foreachRDD(print_top(5))
        return lambda k: None
    from bench.paper import throughput_systems
    from bench.paper.throughput_input import RecordPool
    from bench.paper.throughput_systems import dstream_columnar_program

    throughput_systems.WINDOW_S = args.window_s
    step = args.interval_ms

    pool = RecordPool(500_000, "/tmp/dstream-throughput-pool")
    watched = work / "in"
    watched.mkdir(parents=True)
    dstream_columnar_program(ssc, str(watched), args.program, step / 1000)
    per_interval = args.rate * step // 1000
    keep = args.window_s * 1000 // step + 10

    def put(k: int) -> None:  # lands inside interval k: ((k-1) step, k step]
        hidden = watched / f".f{k}"
        pool.write_file(k, per_interval, hidden)
        mtime = (T0 + (k - 1) * step + step * 3 // 10) * 1_000_000
        os.utime(hidden, ns=(mtime, mtime))
        hidden.rename(watched / f"f{k}")
        if k > keep:  # keep tmpfs small; the window has read them
            (watched / f"f{k - keep}").unlink(missing_ok=True)

    return put


def task_metrics(ui: str, app: str, stage_id: int) -> list[dict[str, Any]]:
    """Spark's metrics of the successful tasks of stage ``stage_id``, from its REST API."""
    url = f"{ui}/api/v1/applications/{app}/stages/{stage_id}/0/taskList?length=1000"
    with urllib.request.urlopen(url, timeout=30) as r:
        return [t for t in json.load(r) if t.get("status") == "SUCCESS"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--program", choices=("quickstart", "grep", "wordcount"), default="quickstart")
    p.add_argument("--intervals", type=int, default=45)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--rate", type=int, default=2000, help="records per second")
    p.add_argument("--interval-ms", type=int, default=1000)
    p.add_argument("--window-s", type=int, default=30)
    p.add_argument(
        "--out",
        type=Path,
        help="default: bench/results/interval_breakdown[-PROGRAM][-MSms-wS].json",
    )
    args = p.parse_args(argv)
    suffix = "" if args.program == "quickstart" else f"-{args.program}"
    if (args.interval_ms, args.window_s) != (1000, 30):
        suffix += f"-{args.interval_ms}ms-w{args.window_s}"
    out = args.out or HERE.parent / "results" / f"interval_breakdown{suffix}.json"

    from pyspark import SparkContext

    from bench.paper.throughput_probe import default_work_root
    from dstream import Duration, ManualClock, StreamingContext, Time
    from dstream.scheduler.shim import StageCompleted, StageSubmitted, TaskEnd
    from dstream.sparkconf import recommended_conf

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the workers need pyarrow
    conf = recommended_conf("local[2]", "dstream-interval-breakdown")
    conf.set("spark.ui.enabled", "true")  # task metrics come from its REST API
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    ui, app = sc.uiWebUrl, sc.applicationId
    clock = ManualClock(T0)
    step = args.interval_ms
    ssc = StreamingContext(sc, Duration(step), clock=clock)
    work = Path(tempfile.mkdtemp(prefix="dstream-breakdown-", dir=default_work_root()))
    put = program(args, ssc, work)
    ssc.start()
    feed = ssc.executor_monitor.subscribe()
    wall: dict[int, float] = {}
    with contextlib.redirect_stdout(io.StringIO()):  # the top words of each interval
        for k in range(1, args.intervals + 1):
            put(k)
            began = time.perf_counter()
            clock.advance(step)
            if not ssc.wait_for_batch(Time(T0 + k * step), 120):
                raise SystemExit(f"interval {k} did not complete")
            wall[k * step] = (time.perf_counter() - began) * 1000
    ssc.executor_monitor.poll_now()
    events = feed.poll()
    stats = engine_of(
        ssc
    ).scheduler.stats  # the driver's own time per interval (as bench/engine/overhead.py)
    per: dict[int, dict[str, Any]] = {}
    for e in events:
        group = getattr(e, "job_group", None) or ""
        tail = group.rsplit("-", 1)[-1]
        if not tail.isdigit():
            continue
        d = per.setdefault(int(tail) - T0, {"stages": {}, "wall": {}, "tasks": {}, "kind": {}})
        if isinstance(e, StageSubmitted):
            d["stages"][e.stage_id] = e.name.split(" at ")[0]
        elif isinstance(e, StageCompleted) and e.submission_time and e.completion_time:
            d["wall"][e.stage_id] = e.completion_time - e.submission_time
        elif isinstance(e, TaskEnd) and e.successful:
            d["tasks"].setdefault(e.task_type, []).append(e.finish_time - e.launch_time)
            d["kind"][e.stage_id] = e.task_type
    kept = [ms for ms in sorted(wall) if ms > args.warmup * step and ms in per]

    metrics: dict[str, list[dict[str, Any]]] = {}
    for ms in kept:
        for sid, kind in per[ms]["kind"].items():
            metrics.setdefault(kind, []).extend(task_metrics(ui, app, sid))
    ssc.stop(stopSparkContext=True)
    shutil.rmtree(work, ignore_errors=True)

    def med(xs: list[float]) -> float:
        return round(statistics.median(xs), 1)

    interval_ms = med([wall[ms] for ms in kept])
    stages_ms = med([sum(per[ms]["wall"].values()) for ms in kept])
    report = {
        "program": args.program,
        "intervals": len(kept),
        "rate": args.rate,
        "interval_ms_setting": step,
        "window_s": args.window_s,
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
        "task_metrics_ms_by_kind": {
            kind: {
                m: med([float(t["taskMetrics"][m] if m in t["taskMetrics"] else t[m]) for t in ts])
                for m in METRICS
            }
            for kind, ts in metrics.items()
        },
        "driver_generate_ms": med([s * 1000 for s in list(stats.generate_s)[args.warmup :]]),
        "driver_complete_ms": med([s * 1000 for s in list(stats.complete_s)[args.warmup :]]),
    }
    print(json.dumps(report, indent=2))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
