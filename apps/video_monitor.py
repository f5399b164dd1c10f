"""Video-distribution monitoring (the paper's Conviva port, Sec. 6.3.1).

Player events (join, heartbeat, exit, error) keyed by session id go through ``track``, which
keeps one state per session (dimensions, play and buffering time, bitrate, failure, last
seen) and closes sessions that stay silent for the timeout. Each interval, the sessions that
changed contribute their increments to sliding-window sums by group (each dimension value,
the CDN in each region, each customer, and all sessions), the state itself gives gauges
(concurrent sessions, sessions over the buffering threshold...), and unique viewers are
counted exactly and with HyperLogLog. Every interval's records and alerts (a group whose
buffering ratio or join failure rate jumps against its own baseline, narrowed to the
CDN-in-region group that accounts for the broader ones) are written exactly once, to
``OUT/metrics-<ms>`` and ``OUT/alerts-<ms>``, and summarised on the console.

    python apps/video_monitor.py --seconds 60                 # on the built-in generator
    python apps/video_monitor.py --source files --dir /data/in --checkpoint /data/ckpt

``--source generator`` writes the generator's files into a directory the monitor watches
(one file per interval, written when its time comes); ``--source files`` reads files some
other process writes (``PYTHONPATH=apps python -m video.generator DIR --live``), and with
``--checkpoint`` resumes after a crash of the driver.
"""

from __future__ import annotations

import json
import math
import operator
import os
import re
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import video
from _cli import MalformedLines, parser, spark
from pyspark import cloudpickle
from video import hll
from video.config import ALL, MonitorConfig
from video.events import Event, parse_event
from video.generator import GeneratorConfig, LiveWriter, add_arguments, config_from_args
from video.metrics import assemble, ended_joins, narrow, to_line
from video.session import (
    I_BUFFERING,
    I_JOIN_FAILURES,
    I_PLAY,
    add,
    gauge_items,
    increment_items,
    initialize,
    sub,
    viewer_items,
)
from video.session import update as update_session

from dstream import DStream, StreamingContext, StreamingListener, StreamingSettings, Time

# The package is not installed on executors: ship its functions by value; so are this
# module's when it is imported rather than run (tests, benchmarks).
cloudpickle.register_pickle_by_value(video)
if __name__ != "__main__":
    cloudpickle.register_pickle_by_value(sys.modules[__name__])


@dataclass
class Monitor:
    """The streams of one monitor: ``sessions`` (the track stream of ``(session id,
    state)``), ``records`` (``(group, record)`` every interval) and ``alerts``."""

    sessions: Any
    records: DStream[Any]
    alerts: DStream[Any]


def _tag(time: Time, rdd: Any) -> Any:
    """Each event with the batch time of the interval that read it."""
    return rdd.mapValues(partial(_with_batch, time.ms))


def _with_batch(batch_ms: int, event: Event) -> tuple[int, Event]:
    return (batch_ms, event)


def _hll_partials(p: int, items: Iterable[tuple[Any, Any]]) -> Iterator[tuple[Any, bytes]]:
    """One sketch per group of a partition's ``(group, viewer)`` records."""
    sketches: dict[Any, bytearray] = {}
    for group, viewer in items:
        sketch = sketches.get(group)
        if sketch is None:
            sketch = sketches[group] = hll.new(p)
        hll.add(sketch, viewer)
    return ((g, bytes(s)) for g, s in sketches.items())


def _gauges(cfg: MonitorConfig, time: Time, rdd: Any) -> Any:
    return rdd.flatMap(lambda kv: gauge_items(kv[1], time.ms, cfg))


def _merge_parts(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    return {**a, **b}


def _baseline_sums(v: tuple[int, ...]) -> tuple[int, int, int, int]:
    """What the alert's baseline window keeps of an interval's increments."""
    return (v[I_BUFFERING], v[I_PLAY], ended_joins(v), v[I_JOIN_FAILURES])


def _narrowed(item: tuple[int, Any]) -> list[dict[str, Any]]:
    return narrow(list(item[1]))


def build(
    events: DStream[Event],
    cfg: MonitorConfig,
    partitions: int | None = None,
    group_partitions: int | None = None,
) -> Monitor:
    """The monitor over a stream of player events (tuples, see :mod:`video.events`);
    ``cfg.batch_ms`` must be the stream's batch interval (the oracle assumes it).

    ``partitions``: of the session state (default: Spark's default parallelism);
    ``group_partitions``: of the per-group windows and records (there are only a few hundred
    groups, and each partition costs a task every interval; default: ``partitions``).
    """
    n = partitions
    gn = group_partitions or partitions
    window, baseline = cfg.window_ms / 1000, cfg.baseline_ms / 1000
    tagged = events.map(lambda e: (e[2], e)).transform(_tag)
    sessions = tagged.track(initialize, update_session, cfg.timeout_ms / 1000, n)
    sessions.setName("sessions")
    changed = sessions.changes().filter(lambda kv: kv[1] is not None).map(lambda kv: kv[1])
    increments = changed.flatMap(increment_items)
    short = increments.reduceByKeyAndWindow(add, sub, window, None, gn)
    long = increments.mapValues(_baseline_sums).reduceByKeyAndWindow(add, sub, baseline, None, gn)
    gauges = sessions.transform(partial(_gauges, cfg)).reduceByKey(add, gn)
    viewers = changed.flatMap(viewer_items)
    sketches = viewers.mapPartitions(partial(_hll_partials, cfg.hll_precision))
    windowed_sketches = sketches.reduceByKeyAndWindow(hll.merge, None, window, None, gn)
    parts = [
        short.mapValues(lambda v: {"w": v}),
        long.mapValues(lambda v: {"b": v}),
        gauges.mapValues(lambda v: {"g": v}),
        windowed_sketches.mapValues(lambda v: {"h": v}),
    ]
    if cfg.exact_uniques:
        distinct = viewers.countByValueAndWindow(window, None, n)
        uniques = distinct.map(lambda kv: (kv[0][0], 1)).reduceByKey(operator.add, gn)
        parts.append(uniques.mapValues(lambda v: {"u": v}))
    merged = events.context().union(*parts).reduceByKey(_merge_parts, gn)
    records = merged.map(lambda kv: (kv[0], assemble(kv[0], kv[1], cfg))).filter(
        lambda kv: kv[1] is not None
    )
    records.cache()
    # An interval's alerts are few: gathered into one partition and narrowed together.
    alerting = records.filter(lambda kv: kv[1]["alert"]).map(lambda kv: (0, kv[1]))
    alerts = alerting.groupByKey(1).flatMap(_narrowed)
    return Monitor(sessions, records, alerts)


def save(monitor: Monitor, out: str) -> None:
    """Every interval's records and alerts, exactly once: ``out/metrics-<ms>``,
    ``out/alerts-<ms>`` (one JSON object a line)."""
    monitor.records.map(lambda kv: to_line(kv[1])).saveAsTextFiles(f"{out}/metrics")
    monitor.alerts.map(to_line).saveAsTextFiles(f"{out}/alerts")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def summary(time: Time, rdd: Any) -> None:
    """One console line per interval (all sessions, the worst CDN) and one per alert."""
    wanted = rdd.filter(lambda kv: kv[0] == ALL or kv[0][0] == "cdn" or kv[1]["alert"])
    rows = [r for _, r in wanted.collect()]
    total = next((r for r in rows if r["dim"] == "all"), None)
    stamp = time.strftime("%H:%M:%S")
    if total is None:
        print(f"[{stamp}] no sessions yet", flush=True)
        return
    cdns = [r for r in rows if r["dim"] == "cdn" and r["buffering_ratio"] is not None]
    worst = max(cdns, key=lambda r: r["buffering_ratio"], default=None)
    bitrate = total["avg_bitrate_kbps"]
    print(
        f"[{stamp}] {total['concurrent_sessions']} sessions | window: "
        f"{total['join_attempts']} joins, {_pct(total['join_failure_rate'])} failed, "
        f"buffering {_pct(total['buffering_ratio'])}, "
        f"{'-' if bitrate is None else round(bitrate)} kbps, "
        f"{total['unique_viewers']} viewers (HLL {total['unique_viewers_hll']})"
        + (f" | worst CDN {worst['value']} {_pct(worst['buffering_ratio'])}" if worst else ""),
        flush=True,
    )
    for r in narrow([r for r in rows if r["alert"]]):
        if r["kind"] == "buffering":
            what = f"buffering {_pct(r['buffering_ratio'])}"
            usual = _pct(r["baseline_buffering_ratio"])
        else:
            what = f"failed joins {_pct(r['failed_join_share'])}"
            usual = _pct(r["baseline_failed_join_share"])
        also = f"; also {', '.join(r['explains'])}" if r["explains"] else ""
        print(f"    ALERT {r['dim']}={r['value']}: {what} (baseline {usual}){also}", flush=True)


class JsonProgress(StreamingListener):
    """One JSON line per completed interval (for scripts that drive the monitor)."""

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        info = batchCompleted.batchInfo()
        print(
            json.dumps(
                {
                    "batch_ms": info.batchTime().ms,
                    "done_ms": int(time.time() * 1000),
                    "records": info.numRecords(),
                    "malformed": info.quarantined,
                    "total_delay_ms": info.totalDelay(),
                }
            ),
            flush=True,
        )


def milliseconds(text: str, option: str) -> int:
    """ "1s", "500ms", "2m" or a number of seconds, as milliseconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|min)?\s*", str(text))
    if m is None:
        raise SystemExit(f"{option} {text!r} is not a duration; write e.g. 500ms, 10s or 2m")
    unit = {"ms": 1, "s": 1000, None: 1000, "m": 60000, "min": 60000}[m.group(2)]
    return round(float(m.group(1)) * unit)


def monitor_config(args: Any) -> MonitorConfig:
    try:
        return MonitorConfig(
            batch_ms=milliseconds(args.batch, "--batch"),
            window_ms=milliseconds(args.window, "--window"),
            baseline_ms=milliseconds(args.baseline, "--baseline"),
            timeout_ms=milliseconds(args.timeout, "--timeout"),
            stall_ms=milliseconds(args.stall, "--stall"),
            alert_min_view_ms=milliseconds(args.alert_min_view, "--alert-min-view"),
            alert_min_joins=args.alert_min_joins,
            hll_precision=args.hll_precision,
            exact_uniques=not args.no_exact_uniques,
        )
    except ValueError as e:
        raise SystemExit(str(e)) from None


def setup(sc: Any, args: Any, directory: str, out: str) -> StreamingContext:
    cfg = monitor_config(args)
    # A malformed event line is set aside (counted, in ssc.quarantined()), not a failure of
    # its interval and of every later one (the session state depends on each interval).
    settings = StreamingSettings(bad_records="quarantine")
    ssc = StreamingContext(sc, cfg.batch_ms / 1000, settings=settings)
    if args.checkpoint:
        ssc.checkpoint(args.checkpoint)
    events = ssc.textFileStream(directory).map(parse_event)
    monitor = build(events, cfg, args.partitions)
    if args.history:
        # The shell's "go back to debug": past intervals' session states stay queryable (each
        # remembered state is an RDD kept cached; the memory grows with the history).
        monitor.sessions.remember(milliseconds(args.history, "--history") / 1000)
    save(monitor, out)
    if not args.quiet:
        monitor.records.foreachRDD(summary)
    return ssc


def parse_args(argv: list[str] | None = None) -> Any:
    """The command line (``--help`` lists it); exits with a message on a bad one."""
    p = parser(__doc__ or "", sources=("generator", "files"), rate=False)
    p.set_defaults(window="10s", seconds=60.0)
    p.add_argument("--baseline", default="60s", help="alert baseline window")
    p.add_argument("--timeout", default="15s", help="silent sessions are closed after this")
    p.add_argument("--stall", default="10s", help="a session silent this long is stalled")
    p.add_argument(
        "--alert-min-view",
        default="5m",
        help="viewing an alert needs in the window and in the baseline",
    )
    p.add_argument(
        "--alert-min-joins",
        type=int,
        default=20,
        help="ended join attempts a join-failure alert needs in the window and in the baseline",
    )
    p.add_argument("--out", help="output directory (default: a new temporary one)")
    p.add_argument("--partitions", type=int, default=None, help="state partitions")
    p.add_argument("--hll-precision", type=int, default=12, help="2**p registers per sketch")
    p.add_argument("--no-exact-uniques", action="store_true", help="HyperLogLog only")
    p.add_argument("--json", action="store_true", help="JSON progress lines on stdout")
    p.add_argument(
        "--history",
        default=None,
        help="keep the session state of this many past intervals' worth of time (e.g. 5m) for "
        "the shell to look back: sessions.at('-2m'), sessions.slice('-5m', 'now')",
    )
    add_arguments(p)
    args = p.parse_args(argv)
    if args.seconds < 0:
        p.error(f"--seconds {args.seconds:g} must be 0 or more (0: run until stopped)")
    if args.source == "files" and not args.dir:
        p.error("--source files needs --dir DIRECTORY (where the event files appear)")
    if args.source == "generator" and args.checkpoint:
        p.error(
            "--checkpoint needs --source files: a restarted driver must find the input the "
            "old one had not processed, so the generator must run in a process of its own "
            "(PYTHONPATH=apps python -m video.generator DIR --live)"
        )
    return args


def run_until_stopped(ssc: StreamingContext, seconds: float, stop: threading.Event) -> bool:
    """Until ``seconds`` have passed (0: no limit), ``stop`` is set (SIGINT, SIGTERM), or
    ``ssc`` is stopped by someone else: Ctrl-D in ``python -m dstream shell``, which runs
    this program on a thread of its own. True in that last case: the stopper owns the stop
    (it may still be finishing batches gracefully). A failed interval raises its error."""
    deadline = time.monotonic() + seconds if seconds > 0 else math.inf
    while not stop.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        # Two things to wait on (the signal's event, the context's stop): look at both
        # every fraction of a second.
        if ssc.awaitTerminationOrTimeout(min(left, 0.2)):
            return True
    return False


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    batch_ms = milliseconds(args.batch, "--batch")
    directory = args.dir or tempfile.mkdtemp(prefix="video-events-")
    os.makedirs(directory, exist_ok=True)
    out = args.out or tempfile.mkdtemp(prefix="video-out-")
    sc = spark(args, "dstream-video")
    created: list[bool] = []  # setup runs only when there is nothing to resume

    def fresh() -> StreamingContext:
        created.append(True)
        return setup(sc, args, directory, out)

    ssc = StreamingContext.getOrCreate(args.checkpoint, fresh, sc) if args.checkpoint else fresh()
    if args.json:
        ssc.addStreamingListener(JsonProgress())
    elif not args.quiet:
        ssc.addStreamingListener(MalformedLines("event lines"))
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    ssc.start()
    # Slice k of the generator is read by the interval ending at origin + (k+1) * batch:
    # the origin is a whole interval at or after the stream's start.
    origin = int(time.time() * 1000) // batch_ms * batch_ms
    writer = None
    if args.source == "generator":
        args.origin_ms, args.slice_ms = origin, batch_ms
        gen_cfg: GeneratorConfig = config_from_args(args)
        writer = LiveWriter(directory, gen_cfg)
        writer.start()
    print(
        json.dumps({"started": True, "restored": not created, "origin_ms": origin, "out": out})
        if args.json
        else f"video monitor: events in {directory}, outputs in {out}",
        flush=True,
    )
    stopped_elsewhere = False
    try:
        stopped_elsewhere = run_until_stopped(ssc, args.seconds, stop)
    finally:
        if writer is not None:
            writer.stop()
        # Whoever stopped it (the shell's Ctrl-D) is finishing the batches gracefully.
        if not stopped_elsewhere:
            ssc.stop(stopSparkContext=True, stopGraceFully=True)
    if not stopped_elsewhere:  # else whoever stopped it reports the end
        print("stopped cleanly", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
