"""A dstream program for the browser tests: its own SparkContext (local[2]) with the Spark UI on
the given port and Spark's PrometheusServlet, and two StreamingContexts on it.

- context "files": ``textFileStream`` over a directory this program writes one file into per
  interval, a word count kept with ``updateStateByKey`` (a state stream, checkpointed every
  2 s), a counting output, and an output that fails on the interval that read the file named
  ``poison-*`` (so one batch fails and shows its error);
- context "queue": a ``queueStream`` of small lists, counted (one record of its second
  interval is set aside: ``bad_records="quarantine"``);
- context "stuck" (started after the others settled): a ``queueStream`` whose output never
  returns (until ``exit``), with ``max_backlog=2``: its first interval stays processing, the
  next one queued, and the due intervals behind them are not generated (the Streaming tab's
  "Active Batches").

Both run on real time (real delays) for ``--batches`` intervals; then their clocks hold, so
no further batch comes and the UI and the metrics hold still while the test reads them. The program prints one JSON line (``{"ui": ..., "appId": ..., "contexts": {key:
{"progress": recentProgress, ...}}}``) and then obeys lines on stdin: ``stop <key>`` stops that
StreamingContext (not the SparkContext) and prints ``stopped <key>``; ``exit`` stops all.

    python tests/browser/streaming_program.py --port 4050 --work /tmp/dir [--batches 5]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any

from pyspark import SparkConf, SparkContext

from dstream import StreamingContext, Time
from dstream.clock import SystemClock
from dstream.scheduler.engine import engine_of
from dstream.settings import StreamingSettings

BATCH_MS = 1000


class HoldingClock:
    """Wall-clock time; after :meth:`hold`, no interval later than that moment ever becomes
    due (the timer waits forever), so the batches due by then are the program's last ones,
    and the test reads a UI that no new batch changes. Time itself goes on, so those batches'
    delays are real."""

    def __init__(self) -> None:
        self._system = SystemClock()
        self._held: Time | None = None
        self._lock = threading.Lock()

    def hold(self) -> Time:
        with self._lock:
            if self._held is None:
                self._held = self._system.now()
            return self._held

    def now(self) -> Time:
        return self._system.now()

    def wait_until(self, target: Time, cancelled: threading.Event) -> bool:
        while True:
            with self._lock:
                held = self._held is not None and target > self._held
            now = self.now()
            if now >= target and not held:
                return True
            # Wake now and then to notice a hold or a cancellation.
            remaining = 0.2 if held else min(0.2, (target.ms - now.ms) / 1000)
            if cancelled.wait(max(remaining, 0.001)):
                return False

    def interrupt(self) -> None:
        """Waiters wait on their cancellation event: nothing to wake."""


def words_context(sc: SparkContext, work: Path, clock: HoldingClock) -> StreamingContext:
    ssc = StreamingContext(
        sc, BATCH_MS / 1000, clock=clock, settings=StreamingSettings(output_retries=0)
    )
    ssc.checkpoint(str(work / "checkpoint"))
    lines = ssc.textFileStream(str(work / "in"))
    words = lines.flatMap(str.split).map(lambda w: (w, 1))
    totals = words.updateStateByKey(lambda new, old: sum(new) + (old or 0)).setName("totals")
    totals.checkpoint(2)
    totals.foreachRDD(lambda rdd: rdd.count())

    def refuse_poison(line: str) -> None:
        if line.startswith("poison"):
            raise ValueError("poison line in this interval's input")

    lines.foreachRDD(lambda rdd: rdd.foreach(refuse_poison))  # fails in a task: a failed job
    return ssc


def queue_context(sc: SparkContext, clock: HoldingClock, batches: int) -> StreamingContext:
    # Its second batch holds a record the map raises on: set aside, shown beside the records.
    settings = StreamingSettings(bad_records="quarantine")
    ssc = StreamingContext(sc, BATCH_MS / 1000, clock=clock, settings=settings)
    data: list[list[Any]] = [list(range(10 * (i + 1))) for i in range(batches)]
    data[1].append("not a number")
    ssc.queueStream(data).map(lambda x: (x % 3, 1)).reduceByKey(lambda a, b: a + b).foreachRDD(
        lambda rdd: rdd.collect()
    )
    return ssc


STUCK = threading.Event()  # the "stuck" context's output waits on it (set at exit)


def wait_for_exit(rdd: Any) -> None:
    STUCK.wait()


def stuck_context(sc: SparkContext) -> StreamingContext:
    ssc = StreamingContext(sc, BATCH_MS / 1000, settings=StreamingSettings(max_backlog=2))
    ssc.queueStream([], default=[1]).foreachRDD(wait_for_exit)
    return ssc


def settle(contexts: list[tuple[StreamingContext, HoldingClock]]) -> None:
    """Stop the clocks, wait for every batch that was due by then, and for the listeners (the
    Streaming tab's feed) to have seen them all."""
    frozen = [clock.hold() for _, clock in contexts]
    for (ssc, _), until in zip(contexts, frozen, strict=True):
        if not ssc.wait_for_batch(Time(until.ms // BATCH_MS * BATCH_MS), 600):
            raise SystemExit(f"the batches due by {until} did not complete in 10 minutes")
        engine_of(ssc).bus.wait_until_empty(60)


def next_interval(clock: HoldingClock) -> None:
    """Wait (on the clock, as the engine's timer does) until the next interval has begun."""
    target = Time((clock.now().ms // BATCH_MS + 1) * BATCH_MS + 50)
    clock.wait_until(target, threading.Event())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--batches", type=int, default=5)
    args = parser.parse_args()
    work: Path = args.work
    (work / "in").mkdir(parents=True, exist_ok=True)

    conf = (
        SparkConf()
        .setMaster("local[2]")
        .setAppName("dstream-ui-test")
        .set("spark.ui.enabled", "true")
        .set("spark.ui.port", str(args.port))
        .set("spark.port.maxRetries", "0")
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.driver.bindAddress", "127.0.0.1")
        .set("spark.ui.showConsoleProgress", "false")
        .set("spark.default.parallelism", "2")
        .set(
            "spark.metrics.conf.*.sink.prometheusServlet.class",
            "org.apache.spark.metrics.sink.PrometheusServlet",
        )
        .set("spark.metrics.conf.*.sink.prometheusServlet.path", "/metrics/prometheus")
    )
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    files_clock, queue_clock = HoldingClock(), HoldingClock()
    files = words_context(sc, work, files_clock)
    queue = queue_context(sc, queue_clock, args.batches)
    contexts = {str(engine_of(files).id): files, str(engine_of(queue).id): queue}
    files.start()
    queue.start()

    # One file per interval (the third one poisoned), then the clocks hold: the batches due by then
    # are all there will be. The engine may run behind (a loaded machine): the file of each
    # interval is chosen by its modification time, whenever the interval is generated.
    for i in range(args.batches):
        poison = i == 2
        name = f"poison-{i}.txt" if poison else f"words-{i}.txt"
        lines = (f"{'poison ' if poison else ''}w{j % 7} w{j % 3}\n" for j in range(20 * (i + 1)))
        tmp = work / f".{name}"
        tmp.write_text("".join(lines))
        os.replace(tmp, work / "in" / name)
        # Modified now, after the rename: an interval that listed the directory before the
        # rename cannot have skipped it for good (the source chooses by modification time).
        os.utime(work / "in" / name)
        next_interval(files_clock)
    settle([(files, files_clock), (queue, queue_clock)])
    stuck = stuck_context(sc)
    stuck.start()
    contexts[str(engine_of(stuck).id)] = stuck

    print(
        json.dumps(
            {
                "ui": sc.uiWebUrl,
                "appId": sc.applicationId,
                "contexts": {
                    key: {"progress": ssc.recentProgress, "id": engine_of(ssc).job_group_prefix}
                    for key, ssc in contexts.items()
                },
                "files": str(engine_of(files).id),
                "queue": str(engine_of(queue).id),
                "stuck": str(engine_of(stuck).id),
            }
        ),
        flush=True,
    )
    for line in sys.stdin:
        command = line.split()
        if command[:1] == ["stop"] and command[1] in contexts:
            contexts[command[1]].stop(stopSparkContext=False)
            print(f"stopped {command[1]}", flush=True)
        elif command[:1] == ["exit"]:
            break
    STUCK.set()
    for ssc in contexts.values():
        ssc.stop(stopSparkContext=False)
    sc.stop()


if __name__ == "__main__":
    main()
