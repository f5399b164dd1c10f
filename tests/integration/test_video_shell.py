"""The video monitor's ad-hoc queries (issue 16, the paper's Fig. 14b) typed into
``python -m dstream shell apps/video_monitor.py`` while it runs.

The monitor reads a directory that the test feeds with the shared generated run
(tests/video_case.py), one file per interval-sized slice, each with its slice's start as
modification time and put in place a few intervals ahead of that time, so slice k is read
by the interval ending at origin + (k+1) s. In the console the four queries (active
sessions, one customer's sessions, failed sessions, top CDNs by buffering ratio) are asked
of ``sessions.snapshot()``, as RDD queries and as SQL on a view of that snapshot; the
answers must equal the oracle's at the interval the snapshot says it holds. Ctrl-D stops
the program with exit code 0.
"""

from __future__ import annotations

import ast
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import video_monitor
from video.generator import EventGenerator, GeneratorConfig, write_slice
from video.oracle import Oracle

from tests.pty_console import Console
from tests.video_case import APPS, MONITOR, generator_config

REPO = Path(__file__).resolve().parents[2]
CUSTOMER = "streamco"
SLICE_MS = 1000
LEAD_SLICES = 5  # how far ahead of its interval a slice's file is put in place
QUERY_AFTER_SLICES = 10  # the queries wait for the interval that reads slice 9 (incident on)
# Generous: on a machine shared with other Spark suites an interval can take several
# seconds, and the stream then runs behind the wall clock (the answers do not depend on it).
WAIT_S = 600


def monitor_args(indir: Path, out: Path) -> list[str]:
    """The monitor's command line, with tests/video_case.MONITOR's settings."""
    return [
        *("--source", "files", "--dir", str(indir), "--out", str(out)),
        *("--seconds", "0", "--quiet", "--partitions", "2"),
        *("--batch", f"{MONITOR.batch_ms}ms", "--window", f"{MONITOR.window_ms}ms"),
        *("--baseline", f"{MONITOR.baseline_ms}ms", "--timeout", f"{MONITOR.timeout_ms}ms"),
        *("--stall", f"{MONITOR.stall_ms}ms"),
        *("--alert-min-view", f"{MONITOR.alert_min_view_ms}ms"),
        *("--alert-min-joins", str(MONITOR.alert_min_joins)),
        *("--hll-precision", str(MONITOR.hll_precision)),
        *("--conf", "spark.ui.enabled=false", "--conf", "spark.default.parallelism=2"),
        *("--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1"),
    ]


class SliceFeeder(threading.Thread):
    """Puts slice k of the generated run into ``directory`` (written under a hidden name,
    its modification time set to the slice's start, renamed into place) when the wall clock
    reaches that start minus ``LEAD_SLICES`` slices, until stopped. A file stream takes a
    file only in the interval its modification time falls in, so early is safe; late would
    move the slice to a later interval, hence ``placed_ms``, checked by the test."""

    def __init__(self, directory: Path, cfg: GeneratorConfig) -> None:
        super().__init__(name="slice-feeder", daemon=True)
        self.directory, self.cfg = directory, cfg
        self.slices: list[list[Any]] = []  # the events of slice k, as written
        self.placed_ms: list[int] = []  # wall-clock time at which slice k was in place
        self._generator = EventGenerator(cfg)
        self._stopped = threading.Event()

    def run(self) -> None:
        while True:
            k = self._generator.index
            start_ms = self.cfg.origin_ms + k * self.cfg.slice_ms
            due_s = (start_ms - LEAD_SLICES * self.cfg.slice_ms) / 1000
            if self._stopped.wait(max(0.0, due_s - time.time())):
                return
            events = self._generator.next_slice()
            write_slice(self.directory, k, events, start_ms)
            self.placed_ms.append(int(time.time() * 1000))
            self.slices.append(events)

    def stop(self) -> None:
        self._stopped.set()
        self.join(30)


def test_the_monitor_command_line_carries_the_shared_monitor_settings(tmp_path: Path) -> None:
    args = video_monitor.parse_args(monitor_args(tmp_path / "in", tmp_path / "out"))
    assert video_monitor.monitor_config(args) == MONITOR
    assert args.seconds == 0  # run until the shell stops it


def _value(console: Console, tag: str, timeout_s: float = WAIT_S) -> Any:
    """The Python literal the console printed after ``tag`` on a line of its own."""
    return ast.literal_eval(console.expect(rf"\n{tag} (.*)\n", timeout_s).group(1))


# make test-full: make test asks the same queries of the same run in process
# (tests/integration/test_video.py, every answer against the oracle) and types queries into
# the shell over a live state (tests/integration/test_shell.py); this one, ~50 s, is both.
@pytest.mark.slow
@pytest.mark.full
def test_ad_hoc_queries_typed_in_the_shell_equal_the_oracle(tmp_path: Path) -> None:
    indir, out = tmp_path / "in", tmp_path / "out"
    indir.mkdir()
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable, "TERM": "dumb"}
    app = str(APPS / "video_monitor.py")
    console = Console(
        [sys.executable, "-m", "dstream", "shell", app, *monitor_args(indir, out)], env
    )
    feeder: SliceFeeder | None = None
    try:
        console.expect(r"Named streams: sessions\n", WAIT_S)
        console.expect(r">>> ")
        # The stream has started (its zero time is at or before now): slice 0 starts at a
        # whole interval after it.
        origin = (int(time.time() * 1000) // SLICE_MS + 2) * SLICE_MS
        feeder = SliceFeeder(indir, generator_config(origin_ms=origin))
        feeder.start()

        console.send("from video.queries import answers, register_view, sql_answers")
        console.expect(r">>> ")
        wanted = origin + QUERY_AFTER_SLICES * SLICE_MS
        console.send(f"print('WAITED', ssc.wait_for_batch(Time({wanted}), {WAIT_S}))")
        assert _value(console, "WAITED", WAIT_S + 60) is True
        console.send("snap = sessions.snapshot()")
        console.send("print('INTERVAL', snap.interval.ms)")
        interval = _value(console, "INTERVAL")
        console.send(f"print('RDD', answers(snap, {CUSTOMER!r}))")
        by_rdd = _value(console, "RDD")
        console.send("view = register_view(spark, snap, 'sessions')")
        console.send(f"print('SQL', sql_answers(spark, {CUSTOMER!r}))")
        by_sql = _value(console, "SQL")
        console.expect(r">>> ", WAIT_S)
        os.write(console.master, b"\x04")  # Ctrl-D at the prompt
        console.expect(r"the program stopped", WAIT_S)
        assert console.proc.wait(WAIT_S) == 0
        # Stopped gracefully: no interval failed (e.g. on state cleaned up under it).
        assert "failed at batch" not in console.transcript, console.transcript[-3000:]
    finally:
        if feeder is not None:
            feeder.stop()
        if console.proc.poll() is None:
            console.proc.kill()
        os.close(console.master)

    # Slice k was read by the interval ending at origin + (k+1) s only if its file was in
    # place before that interval's files were listed (at its end, or later).
    read = (interval - origin) // SLICE_MS  # slices 0 .. read-1 are in the snapshot
    assert wanted <= interval and read <= len(feeder.slices)
    for k in range(read):
        assert feeder.placed_ms[k] < origin + (k + 1) * SLICE_MS, f"slice {k} was late"
    oracle = Oracle(MONITOR)
    for k in range(read):
        oracle.step(origin + (k + 1) * SLICE_MS, feeder.slices[k])
    expected = oracle.answers(CUSTOMER)
    assert by_rdd == expected
    assert by_sql == expected
    # The run at that interval has something to find: live sessions, failures, the incident.
    assert expected["active_sessions"] > 100 and expected["failed_sessions"] > 0
    assert expected["customer_sessions"] > 0 and len(expected["top_cdns_by_buffering"]) >= 3
