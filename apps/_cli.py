"""What the demo applications share: command-line options, the SparkContext, the source."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from pyspark import SparkContext

from dstream import DStream, StreamingContext, StreamingJobError, StreamingListener
from dstream.sparkconf import recommended_conf
from dstream.time import human_time


def parser(
    description: str, sources: tuple[str, ...] = ("rate", "files"), rate: bool = True
) -> argparse.ArgumentParser:
    """The options every demo application takes; ``sources`` are the choices of --source
    (the first is the default), ``rate`` whether --rate (records per second) is one."""
    p = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--source", choices=list(sources), default=sources[0])
    if rate:
        p.add_argument("--rate", type=int, default=2000, help="records per second (rate source)")
    p.add_argument("--dir", help="directory whose new text files are read (files source)")
    p.add_argument("--batch", default="1s", help="batch interval, e.g. 500ms, 1s")
    p.add_argument("--window", default="30s", help="window length, e.g. 30s")
    p.add_argument("--seconds", type=float, default=20, help="how long to run")
    p.add_argument("--checkpoint", help="checkpoint directory (local path or hdfs://...)")
    # Environment variables are read here, at the command-line edge, and nowhere else.
    p.add_argument("--master", default=os.environ.get("DSTREAM_MASTER", "local[2]"))
    p.add_argument("--quiet", action="store_true", help="no per-batch progress lines")
    p.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting, e.g. spark.hadoop.dfs.namenode.http-address=nn:9870 (repeatable)",
    )
    return p


def spark(args: argparse.Namespace, name: str) -> SparkContext:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    conf = recommended_conf(args.master, name)
    for setting in args.conf:
        key, sep, value = setting.partition("=")
        if not sep or not key:
            raise SystemExit(f"--conf {setting!r} is not KEY=VALUE, e.g. spark.ui.enabled=false")
        conf.set(key, value)
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    return sc


def source(ssc: StreamingContext, args: argparse.Namespace) -> DStream[str]:
    if args.source == "files":
        if not args.dir:
            raise SystemExit("--source files needs --dir DIRECTORY")
        return ssc.textFileStream(args.dir)
    return ssc.rateStream(args.rate)


class Progress(StreamingListener):
    def onBatchCompleted(self, batchCompleted: Any) -> None:
        info = batchCompleted.batchInfo()
        print(
            f"    batch {human_time(info.batchTime())}: {info.numRecords()} records, "
            f"processing {info.processingDelay()} ms, total delay {info.totalDelay()} ms",
            flush=True,
        )


class MalformedLines(StreamingListener):
    """One console line per interval whose input had lines the parser refused: under
    ``StreamingSettings(bad_records="quarantine")`` they are set aside
    (``ssc.quarantined()``, ``<checkpoint>/quarantine/``) and the program goes on.
    ``total`` counts them over the run."""

    def __init__(self, what: str = "lines") -> None:
        self.what = what
        self.total = 0

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        info = batchCompleted.batchInfo()
        if info.quarantined:
            self.total += info.quarantined
            print(
                f"    MALFORMED {info.quarantined} {self.what} set aside at "
                f"{human_time(info.batchTime())} ({self.total} in all)",
                flush=True,
            )


def run(ssc: StreamingContext, args: argparse.Namespace) -> int:
    if args.checkpoint:
        ssc.checkpoint(args.checkpoint)
    if not args.quiet:
        ssc.addStreamingListener(Progress())
    ssc.start()
    try:
        ssc.awaitTerminationOrTimeout(args.seconds)
    finally:
        ssc.stop(stopSparkContext=True, stopGraceFully=True)
    print("stopped cleanly", flush=True)
    return 0


class JsonReport(StreamingListener):
    """Each completed interval as one JSON line on stdout (what the recovery tests read)."""

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        info = batchCompleted.batchInfo()
        print(
            json.dumps(
                {
                    "batch_ms": info.batchTime().ms,
                    "done_ms": int(time.time() * 1000),
                    "records": info.numRecords(),
                    "failed": info.failed,
                }
            ),
            flush=True,
        )


def run_resumable(
    args: argparse.Namespace,
    name: str,
    build: Callable[[SparkContext, argparse.Namespace], StreamingContext],
) -> int:
    """Resume the program in ``args.checkpoint`` or build it, run it until SIGTERM/SIGINT or
    ``args.seconds``, and stop gracefully; 1 when an interval failed or the engine halted
    (e.g. another driver took over the checkpoint directory). Reports one JSON line when
    started (restored or not) and one per completed interval."""
    started = time.time()
    sc = spark(args, name)
    created: list[bool] = []  # setup runs only when there is nothing to resume

    def setup() -> StreamingContext:
        created.append(True)
        return build(sc, args)

    ssc = StreamingContext.getOrCreate(args.checkpoint, setup, sc)
    ssc.addStreamingListener(JsonReport())
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    ssc.start()
    print(
        json.dumps(
            {
                "started": True,
                "restored": not created,
                "app_id": sc.applicationId,
                # With app_id, what names this driver's executors on the machine (two
                # local-cluster drivers started in the same second share an app id).
                "driver_port": sc.getConf().get("spark.driver.port"),
                "startup_s": time.time() - started,
            }
        ),
        flush=True,
    )
    deadline = time.monotonic() + args.seconds
    try:
        # Wake up every second to notice SIGTERM; a failed interval or a halted engine raises.
        while not stop.is_set() and time.monotonic() < deadline:
            ssc.awaitTerminationOrTimeout(1)
    except StreamingJobError as exc:
        print(f"{name}: {exc}", file=sys.stderr, flush=True)
        ssc.stop(stopSparkContext=True, stopGraceFully=False)
        return 1
    ssc.stop(stopSparkContext=True, stopGraceFully=True)
    return 0
