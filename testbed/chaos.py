"""A chaos run: one program under random driver kills (SIGKILL of its whole process group)
and executor kills (SIGKILL of one executor JVM) while its input keeps arriving; then every
interval's every output is checked against an oracle recomputed from the input.

The program is ``apps/recoverable.py`` on ``local-cluster`` (separate executor JVMs): file
input, ``updateStateByKey``, a 10 s window with an inverse, ``track`` with a 5 s timeout,
``saveAsTextFiles`` for each, and ``save(sink)``. Which files fall into which interval depends
on timing, so the oracle starts from what each interval read (``lines-<ms>``, itself checked:
every input line in exactly one interval) and recomputes from it every other output of every
interval: running totals, the window, the live sessions and the sink's per-interval counts.
An interval whose outputs are missing, doubled or different is a failure.

    python -m testbed.chaos --driver-kills 20 --executor-kills 10      # bench/ runs this
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import signal
import sys
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from testbed.drivers import App, LocalStorage, wait_for, wait_for_kill_point
from testbed.processes import executor_pids

WORDS = "to be or not that is the question whether tis nobler in the mind".split()
WINDOW_MS, SESSION_MS = 10_000, 6000  # apps/recoverable.py's window and track timeout


@dataclass
class Plan:
    driver_kills: int = 20
    executor_kills: int = 10
    executors: int = 3
    file_every_s: float = 0.25
    lines_per_file: int = 3
    gap_s: tuple[float, float] = (3.0, 8.0)  # between two faults
    seed: int = 2026
    batch_ms: int = 1000  # must divide the app's 10 s window and 6 s session timeout
    # Where the first driver kills fall, in order (testbed.drivers.KILL_POINTS: "checkpoint"
    # waits, after the gap, for a state checkpoint in progress; "commit" for an output's
    # commit); the others at the random end of their gap.
    driver_kill_points: tuple[str, ...] = ()
    window_strategy: str = "checkpoint"  # the window's recovery strategy (or "replay")
    # The lines appended to a Parquet table too (saveToTable, out/table/batch_ms=<ms>),
    # each interval's rows checked against the interval's lines.
    table: bool = False
    # Partitions of every shuffle and state (spark.default.parallelism): each interval runs
    # ~14 tasks per partition over its outputs' stages. On one executor, 2 rather than 4 (a
    # kill still loses every partition): 42 s of the app alone (files arriving, the table
    # too) took 82 and 83 CPU-s against 84 and 97.
    parallelism: int = 4


@dataclass
class Report:
    plan: dict[str, Any]
    driver_kills: int = 0
    executor_kills: int = 0
    restarts: int = 0
    input_lines: int = 0
    intervals: int = 0
    repeated_sink_calls: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


def _lines(f: int, rng: random.Random, n: int) -> list[str]:
    return [f"F{f:05d}-{i} " + " ".join(rng.choices(WORDS, k=4)) for i in range(n)]


def _lines_of(storage: LocalStorage, path: str) -> list[str]:
    """The lines of an output directory's part files (``lines-*`` holds the input as it is)."""
    out: list[str] = []
    for part in sorted(storage.names(path)):
        if part.startswith("part-"):
            out.extend(storage.read_text(f"{path}/{part}").splitlines())
    return out


def _records(storage: LocalStorage, path: str) -> list[Any]:
    """The records of an output of pairs (each line is the repr of a tuple)."""
    return [ast.literal_eval(line) for line in _lines_of(storage, path)]


def _committed(storage: LocalStorage, prefix: str) -> dict[int, str]:
    """``{batch ms: directory}`` of an output's committed intervals."""
    found = {}
    for d in storage.names("out"):
        if d.startswith(f"{prefix}-") and d.rsplit("-", 1)[1].isdigit():
            assert "_DSTREAM_COMMIT" in storage.names(f"out/{d}"), f"uncommitted {d}"
            found[int(d.rsplit("-", 1)[1])] = f"out/{d}"
    return found


OUTPUTS = ("totals", "window", "sessions")  # besides lines-* and the sink


def _table_intervals(storage: LocalStorage) -> set[int]:
    """The intervals committed into the table (``out/table/batch_ms=<ms>``)."""
    return {
        int(n.split("=", 1)[1])
        for n in storage.names("out/table")
        if n.startswith("batch_ms=") and "_DSTREAM_COMMIT" in storage.names(f"out/table/{n}")
    }


def _table_lines(storage: LocalStorage, t: int) -> list[str]:
    """The lines in the table's interval ``t`` (pyarrow skips Spark's ``_``/``.`` files)."""
    import pyarrow.parquet as pq

    path = Path(storage.uri(f"out/table/batch_ms={t}"))
    return [str(v) for v in pq.read_table(path).column("line").to_pylist()]


def complete_upto(storage: LocalStorage, table: bool = False) -> int | None:
    """The newest interval up to which every interval that committed its lines has committed
    every output and the sink's file too (None before the first): what a driver killed
    now leaves complete."""
    outputs = {p: _committed(storage, p) for p in OUTPUTS}
    sink = set(storage.names("out/sink"))
    in_table = _table_intervals(storage) if table else set()
    upto = None
    for t in sorted(_committed(storage, "lines")):
        if f"{t}.txt" not in sink or any(t not in outputs[p] for p in OUTPUTS):
            break
        if table and t not in in_table:
            break
        upto = t
    return upto


def check(
    storage: LocalStorage,
    sent: list[str],
    report: Report,
    batch_ms: int,
    upto: int | None = None,
    table: bool = False,
) -> None:
    """Compare every committed interval of every output with the oracle (up to ``upto``, if
    given: the intervals after it may be cut short by the last kill, and hold no input)."""
    problems = report.problems
    committed = sorted(_committed(storage, "lines").items())
    every = {t: _lines_of(storage, d) for t, d in committed}
    seen = Counter(line for ls in every.values() for line in ls)  # doubles in any interval
    lines = {t: ls for t, ls in every.items() if upto is None or t <= upto}
    missing = set(sent) - set(seen)
    doubled = [line for line, n in seen.items() if n > 1]
    if missing:
        problems.append(f"{len(missing)} input lines in no interval, e.g. {sorted(missing)[:3]}")
    if doubled:
        problems.append(f"{len(doubled)} input lines in two intervals, e.g. {doubled[:3]}")
    times = sorted(lines)
    if times != list(range(times[0], times[-1] + 1, batch_ms)):
        problems.append("intervals missing from lines-*: not every batch time was committed")
    report.intervals = len(times)
    if set(sent) - {line for ls in lines.values() for line in ls}:
        problems.append(f"input lines committed only after interval {upto}")
    outputs = {p: _committed(storage, p) for p in OUTPUTS}
    sink = {
        int(n[:-4]): n for n in storage.names("out/sink") if n.endswith(".txt") and n[:-4].isdigit()
    }
    in_table = _table_intervals(storage) if table else set()
    totals: Counter[str] = Counter()
    per_interval: dict[int, Counter[str]] = {}
    sessions: dict[str, int] = {}
    last_seen: dict[str, int] = {}
    for t in times:
        words = Counter(w for line in lines[t] for w in line.split()[1:])
        per_interval[t] = words
        totals.update(words)
        window: Counter[str] = Counter()
        for u in range(t - WINDOW_MS + batch_ms, t + batch_ms, batch_ms):
            window.update(per_interval.get(u, Counter()))
        for w, n in words.items():
            sessions[w] = sessions.get(w, 0) + n
            last_seen[w] = t
        for w in [w for w in sessions if last_seen[w] <= t - SESSION_MS]:
            del sessions[w]
        want = {"totals": dict(totals), "window": dict(+window), "sessions": dict(sessions)}
        for name, expected in want.items():
            if t not in outputs[name]:
                problems.append(f"{name}-{t} was never committed")
            elif dict(_records(storage, outputs[name][t])) != expected:
                problems.append(f"{name}-{t} differs from the oracle")
        if table and t not in in_table:
            problems.append(f"table interval {t} was never committed")
        elif table and Counter(_table_lines(storage, t)) != Counter(lines[t]):
            problems.append(f"table interval {t} differs from the interval's lines")
        if t not in sink:
            problems.append(f"the sink never wrote interval {t}")
        else:
            text = storage.read_text(f"out/sink/{sink[t]}")
            if dict(ast.literal_eval(r) for r in text.splitlines()) != dict(words):
                problems.append(f"sink interval {t} differs from the oracle")
    calls = Counter(name.split("-")[0] for name in storage.names("out/sink/calls"))
    report.repeated_sink_calls = sum(n - 1 for n in calls.values())


def running_executors(app: App) -> dict[str, int]:
    """The app's executor JVMs (id to pid); right after a restart they may not be up yet, and
    an executor kill waits for them."""
    found: dict[str, int] = {}

    def up() -> bool:
        found.update(executor_pids(app.app_id or "", app.driver_port))
        return bool(found)

    wait_for(up, 120, "executors to kill", 0.1)
    return found


def run(root: Path, plan: Plan, log: Any = None) -> Report:
    """The chaos run in ``root``: faults as ``plan`` says, then :func:`check`."""
    started = time.monotonic()
    report = Report(plan=asdict(plan))
    storage = LocalStorage(root)
    storage.make_dirs()
    master = f"local-cluster[{plan.executors},1,1024]"
    args = ["--master", master, "--conf", f"spark.default.parallelism={plan.parallelism}"]
    args += ["--batch", f"{plan.batch_ms}ms", "--checkpoint-every", f"{2 * plan.batch_ms}ms"]
    args += ["--window-strategy", plan.window_strategy]
    if plan.table:
        args += ["--table", "also"]
    app = App(storage, args)
    rng = random.Random(plan.seed)
    sent: list[str] = []
    stop_writing = threading.Event()

    def write() -> None:
        f = 0
        while not stop_writing.wait(plan.file_every_s):
            lines = _lines(f, rng_input, plan.lines_per_file)
            storage.put_input(f"f{f:05d}.txt", "\n".join(lines) + "\n")
            sent.extend(lines)
            f += 1

    rng_input = random.Random(plan.seed + 1)
    faults = ["driver"] * plan.driver_kills + ["executor"] * plan.executor_kills
    rng.shuffle(faults)
    writer = threading.Thread(target=write, daemon=True)
    try:
        app.start()
        writer.start()
        for n, fault in enumerate(faults, 1):
            threading.Event().wait(rng.uniform(*plan.gap_s))
            if fault == "driver":
                if report.driver_kills < len(plan.driver_kill_points):
                    point = plan.driver_kill_points[report.driver_kills]
                    wait_for_kill_point(storage, point, rng)
                app.kill9()
                report.driver_kills += 1
                if n == len(faults) and plan.driver_kills > 1:
                    # The input ends at the last kill. Files kept arriving through every
                    # earlier restart; more during the last one only lengthened the
                    # catch-up the run then waits for (a restart takes ~10 s, and each of
                    # those intervals ~1.3 cores), and proved the same again.
                    stop_writing.set()
                app.start()
                report.restarts += 1
            else:
                pids = running_executors(app)
                victim = rng.choice(sorted(pids))
                os.kill(pids[victim], signal.SIGKILL)
                report.executor_kills += 1
            if log is not None:
                print(f"chaos: {fault} killed ({report.driver_kills} drivers, "
                      f"{report.executor_kills} executors)", file=log, flush=True)  # fmt: skip
        stop_writing.set()
        writer.join()
        report.input_lines = len(sent)
        upto: list[int | None] = [None]
        read: dict[str, list[str]] = {}  # a committed directory never changes: read once

        def settled() -> bool:
            # Every input line in an interval whose every output is committed.
            upto[0] = complete_upto(storage, plan.table)
            if upto[0] is None:
                return False
            for t, d in _committed(storage, "lines").items():
                if t <= upto[0] and d not in read:
                    read[d] = _lines_of(storage, d)
            return set(sent) <= {ln for lines in read.values() for ln in lines}

        wait_for(
            # Each restart leaves the driver behind real time (it recomputes and runs the
            # intervals missed), at about real-time speed on 2 cores: 20 kills, ~10 min.
            settled, 600 + 60 * plan.driver_kills, "every input line committed", 0.5,
        )  # fmt: skip
        # Then a last kill instead of a graceful stop, which would first run every interval
        # generated ahead (tens of seconds behind real time after a restart): the intervals
        # it cuts short come after all input and are not checked.
    finally:
        stop_writing.set()
        app.kill9()
    check(storage, sent, report, plan.batch_ms, upto[0], plan.table)
    report.seconds = round(time.monotonic() - started, 1)
    return report


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--driver-kills", type=int, default=20)
    p.add_argument("--executor-kills", type=int, default=10)
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--root", help="working directory (default: a new temporary one)")
    p.add_argument("--out", help="write the report here as JSON")
    args = p.parse_args(argv)
    import tempfile

    root = Path(args.root or tempfile.mkdtemp(prefix="dstream-chaos-"))
    plan = Plan(driver_kills=args.driver_kills, executor_kills=args.executor_kills, seed=args.seed)
    report = run(root, plan, log=sys.stderr)
    text = json.dumps({**asdict(report), "ok": report.ok}, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
