"""Benchmarks of the video monitor (issue 16; the paper's Fig. 14).

``sustain``: the most concurrent sessions the monitor keeps up with, per batch interval.
  A probe runs apps/video_monitor.py's program (all metrics, alerts, both outputs saved) on
  a live SparkContext and real clock, fed by the generator in a process of its own writing
  one file per interval into tmpfs, each at the start of its slice. After ``--warmup-s`` it
  measures ``--measure-s`` seconds of intervals: it passes when their mean processing time is
  under the interval and their p95 end-to-end latency (batch completion minus batch time:
  when the interval's outputs were committed, after the interval's data was complete) is
  under the interval too. Sessions are long (median 10 min) and arrive in a burst over the
  first 10 s, so the count holds through the probe. The search (bench/paper/throughput_search.py)
  doubles the session count until a probe fails, then bisects to 10 %.
  Run it once per master: local[2], then local-cluster[1,1,MB] and local-cluster[2,1,MB]
  (one and two executor JVMs) for the Fig. 14a shape.
``queries``: the Fig. 14b ad-hoc queries (video/queries.py; RDD and SQL forms) on the track
  stream's state at one interval, timed against the number of sessions in the state, and
  the state's size per session (pickled record; snapshot file after a compaction).
``probe``: one sustain probe at ``--start-sessions`` per ``--batch``, printed (not saved),
  with ``--conf KEY=VALUE`` Spark settings: how a setting moves an interval's cost.
``loads``: ``--repeats`` probes at each of ``--sessions`` on one warmed context of
  ``--master``, their medians (loads-<master>-<batch>s.json): the Fig. 14a comparison of
  one and two executors at the same loads, which single probes are too noisy for.
``report``: a table (markdown, stdout and report.md) and plots from the JSON results.

    .venv/bin/python -m bench.paper.video_analytics sustain --batch 1 2 --master 'local[2]'
    .venv/bin/python -m bench.paper.video_analytics sustain --batch 1 2 \
        --master 'local-cluster[1,1,4096]'
    .venv/bin/python -m bench.paper.video_analytics sustain --batch 1 2 \
        --master 'local-cluster[2,1,4096]'
    .venv/bin/python -m bench.paper.video_analytics queries --sessions 10000 50000 100000 200000
    .venv/bin/python -m bench.paper.video_analytics report
    .venv/bin/python -m bench.paper.video_analytics --smoke  # every part, tiny, in a temp dir
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "apps"))

from bench.paper.throughput_search import Criteria, ProbeSummary, search, summarize, verdict  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "video"


def spark_context(master: str, partitions: int, settings: tuple[str, ...] = ()) -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkContext

    from dstream.sparkconf import recommended_conf

    conf = (
        recommended_conf(master, "dstream-video-bench")
        .set("spark.ui.enabled", "false")
        .set("spark.default.parallelism", str(partitions))
    )
    for setting in settings:  # --conf KEY=VALUE, after the recommended ones
        key, sep, value = setting.partition("=")
        if not sep or not key:
            raise SystemExit(f"--conf {setting!r} must be KEY=VALUE, e.g. spark.locality.wait=0")
        conf.set(key, value)
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    return sc


def work_dir() -> str:
    shm = Path("/dev/shm")
    return tempfile.mkdtemp(
        prefix="video-bench-", dir=str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
    )


def sustain_probe(sc: Any, sessions: int, batch_s: float, args: argparse.Namespace) -> ProbeSummary:
    import video_monitor
    from video.config import MonitorConfig
    from video.events import parse_event

    from dstream import StreamingContext, StreamingListener

    batch_ms = round(batch_s * 1000)
    root = work_dir()
    incoming, out = f"{root}/in", f"{root}/out"
    os.makedirs(incoming)
    ssc = StreamingContext(sc, batch_s)
    events = ssc.textFileStream(incoming).map(parse_event)
    timeout_ms = -(-MonitorConfig.timeout_ms // batch_ms) * batch_ms  # whole intervals
    cfg = MonitorConfig(
        batch_ms=batch_ms, window_ms=10_000, baseline_ms=60_000, timeout_ms=timeout_ms
    )
    monitor = video_monitor.build(events, cfg, args.partitions, args.group_partitions)
    video_monitor.save(monitor, out)
    batches: dict[int, tuple[int, int]] = {}
    started = threading.Event()

    class Delays(StreamingListener):
        def onBatchCompleted(self, batchCompleted: Any) -> None:
            info = batchCompleted.batchInfo()
            batches[info.batchTime().ms] = (info.processingDelay(), info.totalDelay())
            started.set()

    ssc.addStreamingListener(Delays())
    ssc.start()
    # Start-up (Python workers forked, first jobs) is not charged to the probe: input
    # begins once the first, empty, interval has completed.
    if not started.wait(300):
        raise RuntimeError("the monitor's first interval did not complete within 300 s")
    origin = (int(time.time() * 1000) // batch_ms + 1) * batch_ms
    seconds = args.warmup_s + args.measure_s
    writer = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "video.generator",
            incoming,
            "--live",
            *("--origin-ms", str(origin), "--slice-ms", str(batch_ms)),
            *("--seconds", str(seconds), "--sessions", str(sessions)),
            *("--median-session-s", "600", "--incident-for", "0"),
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT / "apps")},
        stdout=subprocess.DEVNULL,
    )
    first = origin + round(args.warmup_s * 1000) + batch_ms
    last = origin + round(seconds * 1000)
    try:
        # A monitor that keeps up completes the last interval about one interval after it
        # ends; one that does not is judged on what completed by then (the rest: no result).
        ssc.wait_for_batch(
            last, timeout_s=max(1.0, (last - time.time() * 1000) / 1000 + 2 * batch_s)
        )
    finally:
        writer.kill()
        writer.wait()
        ssc.stop(stopSparkContext=False, stopGraceFully=False)
        shutil.rmtree(root, ignore_errors=True)
    measured = range(first, last + 1, batch_ms)
    processing = [batches[t][0] for t in measured if t in batches]
    latency = [batches[t][1] if t in batches else None for t in measured]
    summary = summarize(sessions, processing or [float("inf")], latency)
    print(json.dumps({"probe": sessions, "batch_s": batch_s, **summary.to_json()}), flush=True)
    return summary


def jvm_warmup(sc: Any, args: argparse.Namespace) -> None:
    """One unjudged probe of ``--jvm-warmup-s`` seconds before the measured ones: the driver's
    and every executor's JVM compile the hot paths of the monitor's jobs (C2 was the JVMs'
    largest CPU user in the first minute), so that the probes measure the program and not
    that. Two executor JVMs compile twice as much as one on the same cores, which is what
    made local-cluster[2,...] look slower than local-cluster[1,...] (apps/video/README.md)."""
    warm = argparse.Namespace(**{**vars(args), "warmup_s": args.jvm_warmup_s, "measure_s": 5.0})
    print(f"warming the JVMs up for {args.jvm_warmup_s:g} s (not judged)", flush=True)
    sustain_probe(sc, min(args.start_sessions, 1000), args.batch[0], warm)


def run_sustain(args: argparse.Namespace) -> None:
    sc = spark_context(args.master, args.partitions or 2, tuple(args.conf))
    try:
        if args.jvm_warmup_s > 0:
            jvm_warmup(sc, args)
        for batch_s in args.batch:
            criteria = Criteria(round(batch_s * 1000), round(batch_s * 1000))
            if args.part == "probe":  # one probe at --start-sessions, printed, not saved
                summary = sustain_probe(sc, args.start_sessions, batch_s, args)
                print(
                    json.dumps(
                        {
                            "master": args.master,
                            "conf": args.conf,
                            "verdict": verdict(summary, criteria),
                        }
                    ),
                    flush=True,
                )
                continue
            if args.smoke:  # one probe, whatever its verdict (the machine may be busy)
                summary = sustain_probe(sc, args.start_sessions, batch_s, args)
                ok, why = verdict(summary, criteria)
                record = {"part": "sustain", "master": args.master, "batch_s": batch_s}
                record |= {"sessions": summary.rate if ok else None, "capped": False, "why": why}
                save(args.out, f"sustain-{safe(args.master)}-{batch_s}s.json", record)
                continue
            result = search(
                lambda n, b=batch_s: sustain_probe(sc, n, b, args),
                criteria,
                start_rate=args.start_sessions,
                max_rate=args.max_sessions,
                min_rate=min(100, args.start_sessions),
                max_probes=args.max_probes,
            )
            record = {
                "part": "sustain",
                "master": args.master,
                "batch_s": batch_s,
                "sessions": result.sustained_rate,
                "capped": result.capped,
                "probes": [
                    {**s.to_json(), "passed": ok, "why": why} for s, ok, why in result.probes
                ],
            }
            save(args.out, f"sustain-{safe(args.master)}-{batch_s}s.json", record)
    finally:
        sc.stop()


def run_loads(args: argparse.Namespace) -> None:
    """``loads``: at each of ``--sessions``, ``--repeats`` probes on one warmed SparkContext
    of ``--master``; the median of their mean processing times and p95 latencies. Repeated
    probes of one load on this machine vary by up to 1.8x (608-1,101 ms), more than a
    bisection over single probes can tell apart."""
    sc = spark_context(args.master, args.partitions or 2, tuple(args.conf))
    rows: list[dict[str, Any]] = []
    try:
        batch_s = args.batch[0]
        if args.jvm_warmup_s > 0:
            jvm_warmup(sc, args)
        for sessions in args.sessions:
            probes = [sustain_probe(sc, sessions, batch_s, args) for _ in range(args.repeats)]
            row = {
                "sessions": sessions,
                "mean_processing_ms": [p.to_json()["mean_processing_ms"] for p in probes],
                "p95_latency_ms": [p.to_json()["p95_latency_ms"] for p in probes],
                "median_processing_ms": statistics.median(p.mean_processing_ms for p in probes),
                "median_p95_latency_ms": statistics.median(p.p95_latency_ms for p in probes),
            }
            print(json.dumps(row), flush=True)
            rows.append(row)
    finally:
        sc.stop()
    record = {"part": "loads", "master": args.master, "batch_s": args.batch[0], "rows": rows}
    for row in rows:  # JSON has no infinity: a probe without a result is null
        for key in ("median_processing_ms", "median_p95_latency_ms"):
            if row[key] == float("inf"):
                row[key] = None
    save(args.out, f"loads-{safe(args.master)}-{args.batch[0]}s.json", record)


def safe(master: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in master).strip("_")


def median_time(fn: Any, repeats: int) -> tuple[float, Any]:
    times, value = [], None
    for _ in range(repeats):
        began = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000, value


def query_run(sc: Any, sessions: int, args: argparse.Namespace) -> dict[str, Any]:
    import video_monitor
    from pyspark.sql import SparkSession
    from video import queries
    from video.config import MonitorConfig
    from video.generator import EventGenerator, GeneratorConfig

    from dstream import Duration, ManualClock, StreamingContext, Time

    # Measured once a compaction of the state (every 10 s; in a smoke run every 2 s) has
    # written a snapshot.
    intervals = 4 if args.smoke else 12
    gen = GeneratorConfig(
        seed=5, sessions=sessions, burst_s=5, median_session_s=3600, incident=None
    )
    slices = EventGenerator(gen).slices(intervals)
    clock = ManualClock(0)
    ssc = StreamingContext(sc, Duration(1000), clock=clock)
    state_root = tempfile.mkdtemp(prefix="video-bench-state-")
    ssc.checkpoint(state_root)  # where track() writes its snapshots
    events = ssc.queueStream([sc.parallelize(s, args.partitions or 2) for s in slices])
    monitor = video_monitor.build(events, MonitorConfig(), args.partitions, args.group_partitions)
    monitor.records.foreachRDD(lambda rdd: rdd.count())
    if args.smoke:
        monitor.sessions.checkpoint(2)
    result: dict[str, Any] = {"part": "queries", "master": args.master, "sessions": sessions}

    def measure(time_: Any, rdd: Any) -> None:
        if time_.ms != intervals * 1000:
            return
        spark = SparkSession.builder.getOrCreate()
        rdd.cache()
        result["in_state"] = rdd.count()
        for name, fn in (
            ("active_sessions", lambda: queries.active_sessions(rdd)),
            ("customer_sessions", lambda: queries.customer_sessions(rdd, "streamco")),
            ("failed_sessions", lambda: queries.failed_sessions(rdd)),
            ("top_cdns_by_buffering", lambda: queries.top_cdns_by_buffering(rdd)),
        ):
            result[f"rdd_{name}_ms"], result[name] = median_time(fn, args.repeats)
        result["register_view_ms"], _ = median_time(lambda: queries.register_view(spark, rdd), 1)
        for name in queries.SQL:
            query = queries.SQL[name].format(
                view="sessions", customer="streamco", n=5, kbps=queries.DEFAULT_KBPS
            )
            result[f"sql_{name}_ms"], _ = median_time(
                lambda q=query: spark.sql(q).collect(), args.repeats
            )
        sizes = rdd.map(lambda kv: len(pickle.dumps(kv, protocol=5))).collect()
        result["pickled_bytes_per_session"] = statistics.fmean(sizes) if sizes else None
        result["snapshot_bytes_per_session"] = snapshot_bytes(state_root) / max(
            1, result["in_state"]
        )
        rdd.unpersist()

    monitor.sessions.foreachRDD(measure)
    ssc.start()
    try:
        began = time.perf_counter()
        for i in range(1, intervals + 1):
            clock.advance(1000)
            if not ssc.wait_for_batch(Time(i * 1000), 3600):
                raise RuntimeError(f"interval {i} did not complete")
        result["seconds"] = time.perf_counter() - began
        ssc.awaitTerminationOrTimeout(0)  # raises if an interval (or the measurement) failed
    finally:
        ssc.stop(stopSparkContext=False)
        shutil.rmtree(state_root, ignore_errors=True)
    print(json.dumps(result), flush=True)
    return result


def snapshot_bytes(root: str) -> int:
    """Bytes of the newest complete track() snapshot under the checkpoint directory ``root``
    (a directory holding ``_COMPLETE`` and the partitions' SQLite files)."""
    complete = [d for d, _, names in os.walk(root) if "_COMPLETE" in names]
    snapshots = [d for d in complete if any(n.endswith(".sqlite") for n in os.listdir(d))]
    if not snapshots:
        return 0
    newest = max(snapshots, key=os.path.getmtime)
    return sum(os.path.getsize(os.path.join(newest, n)) for n in os.listdir(newest))


def run_queries(args: argparse.Namespace) -> None:
    sc = spark_context(args.master, args.partitions or 2)
    try:
        runs = [query_run(sc, n, args) for n in args.sessions]
        save(args.out, f"queries-{safe(args.master)}.json", {"part": "queries", "runs": runs})
    finally:
        sc.stop()


def save(out: Path, name: str, record: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / name).write_text(json.dumps(record, indent=1) + "\n")


def report(out: Path) -> str:
    """A markdown table of every result in ``out``, and plots next to them."""
    sustain = [json.loads(p.read_text()) for p in sorted(out.glob("sustain-*.json"))]
    runs = [
        r for p in sorted(out.glob("queries-*.json")) for r in json.loads(p.read_text())["runs"]
    ]
    lines = ["| master | interval | sessions sustained |", "| --- | --- | --- |"]
    for r in sustain:
        capped = " (capped)" if r["capped"] else ""
        lines.append(f"| {r['master']} | {r['batch_s']} s | {r['sessions']}{capped} |")
    lines += [
        "",
        "| sessions in state | active | customer | failed | top CDNs | SQL: active | customer "
        "| failed | top CDNs | bytes/session (pickled, snapshot) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    names = ("active_sessions", "customer_sessions", "failed_sessions", "top_cdns_by_buffering")
    for r in runs:
        cells = [f"{r[f'rdd_{n}_ms']:.0f} ms" for n in names]
        cells += [f"{r[f'sql_{n}_ms']:.0f} ms" for n in names]
        size = f"{r['pickled_bytes_per_session']:.0f}, {r['snapshot_bytes_per_session']:.0f}"
        lines.append(f"| {r['in_state']} | " + " | ".join(cells) + f" | {size} |")
    text = "\n".join(lines) + "\n"
    (out / "report.md").write_text(text)
    plot(out, sustain, runs)
    return text


def plot(out: Path, sustain: list[dict[str, Any]], runs: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if sustain:
        fig, ax = plt.subplots(figsize=(5, 3.5))
        for batch_s in sorted({r["batch_s"] for r in sustain}):
            rows = [r for r in sustain if r["batch_s"] == batch_s]
            ax.bar(
                [f"{r['master']}\n{batch_s} s" for r in rows],
                [r["sessions"] or 0 for r in rows],
            )
        ax.set_ylabel("concurrent sessions sustained")
        ax.set_title("Video monitor (Fig. 14a shape)")
        fig.tight_layout()
        fig.savefig(out / "video-sustain.png", dpi=120)
        plt.close(fig)
    if runs:
        fig, ax = plt.subplots(figsize=(5, 3.5))
        xs = [r["in_state"] for r in runs]
        for name in ("active_sessions", "customer_sessions", "failed_sessions"):
            ax.plot(xs, [r[f"rdd_{name}_ms"] for r in runs], marker="o", label=name)
        ax.set_xlabel("sessions in state")
        ax.set_ylabel("query latency (ms)")
        ax.set_title("Ad-hoc queries on the live state (Fig. 14b)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(out / "video-queries.png", dpi=120)
        plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("part", nargs="?", choices=["sustain", "probe", "loads", "queries", "report"])
    p.add_argument("--smoke", action="store_true", help="every part, tiny, in a temp directory")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--batch", type=float, nargs="+", default=[1.0, 2.0], help="seconds")
    p.add_argument("--start-sessions", type=int, default=5000)
    p.add_argument("--max-sessions", type=int, default=2_000_000)
    p.add_argument("--max-probes", type=int, default=12)
    p.add_argument("--warmup-s", type=float, default=30.0)
    p.add_argument("--measure-s", type=float, default=30.0)
    p.add_argument("--sessions", type=int, nargs="+", default=[10_000, 50_000, 100_000, 200_000])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--partitions", type=int, default=None, help="state partitions")
    p.add_argument("--group-partitions", type=int, default=None)
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument(
        "--jvm-warmup-s",
        type=float,
        default=90.0,
        help="an unjudged probe first, for the JVMs' compilers (0: none)",
    )
    p.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting for the probe's SparkContext (repeatable)",
    )
    args = p.parse_args(argv)
    if args.smoke:
        args.out = Path(tempfile.mkdtemp(prefix="video-bench-smoke-"))
        args.batch, args.start_sessions = [1.0], 300
        args.warmup_s, args.measure_s, args.jvm_warmup_s = 2.0, 2.0, 0.0
        args.sessions, args.repeats = [500], 1
        run_sustain(args)
        run_queries(args)
        print(report(args.out), flush=True)
        print(f"smoke results in {args.out}", flush=True)
        return 0
    if args.part is None:
        p.error("name a part (sustain, probe, loads, queries, report) or --smoke")
    if args.part == "probe":
        run_sustain(args)
        return 0
    if args.part == "loads":
        run_loads(args)
        return 0
    if args.part == "sustain":
        run_sustain(args)
    elif args.part == "queries":
        run_queries(args)
    print(report(args.out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
