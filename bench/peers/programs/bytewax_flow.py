"""Bytewax on the peers harness's input (bench/peers, #62), as Bytewax's docs write a flow: a
stateful, resumable input partition that reads each new file of the watched directory once
(its snapshot: the files read), ``filter``/``key_on`` in Python, Grep as ``count``-like
``reduce_window`` per event second over 1 s tumbling windows of system time, the running
total as ``stateful_map`` (one updated total per record), WordCount as ``reduce_window`` per
word over sliding windows of system time (``--window-ms`` sliding by the interval), TopK the
same counts keyed by window into a ``stateful`` step that collects a window's counts and, a
quarter interval after the first (``notify_at``), prints its top words. Results on stdout,
whole lines.
Recovery (``--checkpoint-ms`` > 0): snapshots every epoch into a recovery directory
(``bytewax.recovery`` partitions), the epoch being ``--checkpoint-ms``.
Runs in build/peers-venv (bytewax), ``--parallelism`` worker threads in one process."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bytewax import operators as op
from bytewax.dataflow import Dataflow
from bytewax.inputs import FixedPartitionedSource, StatefulSourcePartition
from bytewax.operators import StatefulLogic
from bytewax.operators import windowing as win
from bytewax.outputs import DynamicSink, StatelessSinkPartition

PATTERN = "kato"  # bench/peers/records.py's
PREFIX = 24  # bench/peers/records.py's: a record's words start here
TOP = 10
ALIGN = datetime(2026, 1, 1, tzinfo=UTC)


class _DirPartition(StatefulSourcePartition[str, list[str]]):
    """Each new file of ``directory`` (not ``.``/``_``-hidden), whole, once, in name order."""

    def __init__(self, directory: str, done: list[str] | None) -> None:
        self.directory = directory
        self.done = set(done or [])
        self.idle = False

    def next_batch(self) -> list[str]:
        names = sorted(
            n for n in os.listdir(self.directory) if n[0] not in "._" and n not in self.done
        )
        self.idle = not names
        if not names:
            return []
        with open(os.path.join(self.directory, names[0]), encoding="ascii") as f:
            lines = f.read().splitlines()
        self.done.add(names[0])
        return lines

    def next_awake(self) -> datetime | None:
        if self.idle:
            return datetime.now(UTC) + timedelta(milliseconds=50)
        return None

    def snapshot(self) -> list[str]:
        return sorted(self.done)


_STDOUT = threading.Lock()


class _Lines(StatelessSinkPartition[str]):
    def write_batch(self, items: list[str]) -> None:
        # One write per batch: StdOutSink's print() writes the item and its newline apart, and
        # two workers' lines interleaved ("t k1 8 ...t k2 7 ...", then an empty line). Under
        # a lock: the workers are threads of one process, and sys.stdout (a TextIOWrapper) is
        # not thread-safe; at 20k records/s a batch written beside another's still broke
        # ~800 of 600,000 lines (figure 3, 2026-12-07: keys "lost" and "unexpected").
        if items:
            text = "".join(f"{item}\n" for item in items)
            with _STDOUT:
                sys.stdout.write(text)
                sys.stdout.flush()


class LinesSink(DynamicSink[str]):
    """Each worker's items on stdout, whole lines (Bytewax's ``StdOutSink``, without the
    interleaving)."""

    def build(self, step_id: str, worker_index: int, worker_count: int) -> _Lines:
        return _Lines()


class DirSource(FixedPartitionedSource[str, list[str]]):
    def __init__(self, directory: str) -> None:
        self.directory = directory

    def list_parts(self) -> list[str]:
        return ["watched"]

    def build_part(self, step_id: str, for_part: str, resume_state: list[str] | None):
        return _DirPartition(self.directory, resume_state)


class _TopOfWindow(
    StatefulLogic[tuple[str, str, int, int], str, tuple[str, dict[str, tuple[int, int]]]]
):
    """One window's ``(window, word, count, newest)`` collected until ``wait`` after the
    first, then its ``TOP`` words (count descending, word ascending) as ``k`` lines. Bytewax
    builds the logic from its resumed state alone (not the key), so the window rides along
    with each item and in the snapshot."""

    def __init__(self, state: tuple[str, dict[str, tuple[int, int]]] | None, wait: timedelta):
        self.window, words = state if state is not None else ("", {})
        self.words = dict(words)
        self.wait = wait
        self.due: datetime | None = None

    def on_item(self, value: tuple[str, str, int, int]) -> tuple[list[str], bool]:
        if self.due is None:
            self.due = datetime.now(UTC) + self.wait
        self.window = value[0]
        self.words[value[1]] = (value[2], value[3])
        return [], StatefulLogic.RETAIN

    def on_notify(self) -> tuple[list[str], bool]:
        best = sorted(self.words.items(), key=lambda kv: (-kv[1][0], kv[0]))[:TOP]
        return [f"k {self.window} {w} {c} {ts}" for w, (c, ts) in best], StatefulLogic.DISCARD

    def notify_at(self) -> datetime | None:
        return self.due

    def snapshot(self) -> tuple[str, dict[str, tuple[int, int]]]:
        return self.window, dict(self.words)


def windowed(lines, workload: str, interval_ms: int, window_ms: int):  # type: ignore[no-untyped-def]
    """WordCount's ``w`` lines or TopK's ``k`` lines over sliding windows of system time."""
    words = op.flat_map(
        "words", lines, lambda line: [(w, int(line[:13])) for w in line[PREFIX:].split()]
    )
    keyed = op.map_value("one", op.key_on("word", words, lambda wt: wt[0]), lambda wt: (1, wt[1]))
    counts = win.reduce_window(
        "count",
        keyed,
        win.SystemClock(),
        win.SlidingWindower(
            length=timedelta(milliseconds=window_ms),
            offset=timedelta(milliseconds=interval_ms),
            align_to=ALIGN,
        ),
        lambda a, b: (a[0] + b[0], max(a[1], b[1])),
    )
    if workload == "wordcount":
        return op.map(
            "format", counts.down, lambda kv: f"w {kv[1][0]} {kv[0]} {kv[1][1][0]} {kv[1][1][1]}"
        )

    def by_window_of(kv):  # type: ignore[no-untyped-def]
        window = str(kv[1][0])
        return window, (window, kv[0], kv[1][1][0], kv[1][1][1])

    by_window = op.map("by window", counts.down, by_window_of)
    wait = timedelta(milliseconds=max(1, interval_ms // 4))
    tops = op.stateful("top", by_window, lambda state: _TopOfWindow(state, wait))
    return op.map("format", tops, lambda kv: kv[1])


def build(
    workload: str,
    directory: str,
    interval_ms: int,
    window_ms: int = 30_000,
    kafka: tuple[str, str] | None = None,
) -> Dataflow:
    """``kafka``: (bootstrap, topic prefix) to read ``<prefix>-in`` and write ``<prefix>-out``
    through ``bytewax.connectors.kafka`` instead of the directory and stdout."""
    flow = Dataflow(f"peers-{workload}")
    if kafka is not None:
        from bytewax.connectors.kafka import KafkaSource

        messages = op.input("in", flow, KafkaSource([kafka[0]], [f"{kafka[1]}-in"]))
        lines = op.map("value", messages, lambda m: m.value.decode())
    else:
        lines = op.input("in", flow, DirSource(directory))
    if workload == "grep":
        hits = op.filter("grep", lines, lambda line: PATTERN in line)
        keyed = op.key_on(
            "second", op.map("parse", hits, lambda line: int(line[:13])), lambda ts: str(ts // 1000)
        )
        counted = op.map_value("one", keyed, lambda ts: (1, ts))
        windows = win.reduce_window(
            "count",
            counted,
            win.SystemClock(),
            win.TumblingWindower(
                length=timedelta(milliseconds=interval_ms),
                align_to=datetime(2026, 1, 1, tzinfo=UTC),
            ),
            lambda a, b: (a[0] + b[0], max(a[1], b[1])),
        )
        out = op.map("format", windows.down, lambda kv: f"g {kv[0]} {kv[1][1][0]} {kv[1][1][1]}")
    elif workload in ("wordcount", "topk"):
        out = windowed(lines, workload, interval_ms, window_ms)
    else:
        keyed = op.key_on("key", lines, lambda line: line[14:21])
        values = op.map_value("parse", keyed, lambda line: (int(line[22]), int(line[:13])))

        def add(state: tuple[int, int] | None, v: tuple[int, int]):
            total = (state[0] if state else 0) + v[0]
            new = (total, max(state[1] if state else 0, v[1]))
            return new, new

        totals = op.stateful_map("total", values, add)
        out = op.map("format", totals, lambda kv: f"t {kv[0]} {kv[1][0]} {kv[1][1]}")
    if kafka is not None:
        from bytewax.connectors.kafka import KafkaSink, KafkaSinkMessage

        records = op.map("record", out, lambda line: KafkaSinkMessage(None, line.encode()))
        op.output("out", records, KafkaSink([kafka[0]], f"{kafka[1]}-out"))
    else:
        op.output("out", out, LinesSink())
    return flow


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--workload", choices=("grep", "total", "wordcount", "topk"), required=True)
    p.add_argument("--window-ms", type=int, default=30_000, help="WordCount's and TopK's")
    p.add_argument("--input", required=True)
    p.add_argument("--interval-ms", type=int, default=1000)
    p.add_argument("--parallelism", type=int, default=2)
    p.add_argument("--checkpoint-dir", required=True)
    p.add_argument("--checkpoint-ms", type=int, default=10_000, help="0: recovery off")
    p.add_argument("--via", choices=("files", "kafka"), default="files")
    p.add_argument("--bootstrap", help="--via kafka: the broker, host:port")
    p.add_argument("--topic-prefix", default="peers", help="--via kafka: <prefix>-in, -out")
    args = p.parse_args()
    from bytewax.recovery import RecoveryConfig, init_db_dir
    from bytewax.run import cli_main

    recovery = None
    epoch = timedelta(milliseconds=args.checkpoint_ms or 10_000)
    if args.checkpoint_ms:
        db = os.path.join(args.checkpoint_dir, "bytewax")
        if not os.path.isdir(db):
            os.makedirs(db)
            init_db_dir(Path(db), 1)
        recovery = RecoveryConfig(Path(db))
    kafka = (args.bootstrap, args.topic_prefix) if args.via == "kafka" else None
    flow = build(args.workload, args.input, args.interval_ms, args.window_ms, kafka)
    print("# started", int(time.time() * 1000), file=sys.stderr, flush=True)
    cli_main(
        flow,
        workers_per_process=args.parallelism,
        epoch_interval=epoch,
        recovery_config=recovery,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
