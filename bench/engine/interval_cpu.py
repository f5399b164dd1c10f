"""What one interval of the chaos run's program costs, in CPU, by process: the CI chaos
run's program (``apps/recoverable.py``: lines, running totals, a window with an inverse on
``replay``, track() sessions, a save() sink) on ``local-cluster[2,1,1024]`` with the input
testbed.chaos writes (3 lines every 0.25 s), no faults. CPU (user + system, from
``/proc/<pid>/stat``) of the driver's process tree by kind, from the end of the
``--warmup``-th interval to the last, divided by the intervals in between; the lag of every
interval (committed minus batch time) shows whether the program keeps up.

    .venv/bin/python -m bench.engine.interval_cpu
    .venv/bin/python -m bench.engine.interval_cpu --parallelism 2
    .venv/bin/python -m bench.engine.interval_cpu --conf spark.dstream.shuffle.sharedKryo=false

The tests' JVM options (C1 only, SerialGC: tests/conftest.py) unless ``--jvm-default``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

from testbed.chaos import _lines
from testbed.drivers import App, LocalStorage, wait_for
from testbed.processes import process_tree

TESTS_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def _kind(pid: int) -> str | None:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return None
    if "CoarseGrainedExecutorBackend" in cmdline:
        return "executor JVMs"
    if "java" in cmdline.split(" ", 1)[0]:
        return "driver JVM"
    if "recoverable.py" in cmdline:
        return "driver Python"
    return "Python workers" if "python" in cmdline else None


def cpu_by_kind(root_pid: int) -> dict[str, float]:
    """CPU-seconds so far of ``root_pid``'s process tree, by kind of process; ``root_pid``
    itself, a Python driver, counts as "driver Python" (a benchmark measuring itself, not
    apps/recoverable.py). Processes that exited meanwhile drop out of the sums."""
    found: dict[str, float] = {}
    ticks = os.sysconf("SC_CLK_TCK")
    for pid in process_tree(root_pid):
        kind = _kind(pid)
        if pid == root_pid and kind == "Python workers":
            kind = "driver Python"
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if kind is not None:
            found[kind] = found.get(kind, 0.0) + (int(fields[11]) + int(fields[12])) / ticks
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--intervals", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--parallelism", type=int, default=4, help="spark.default.parallelism")
    p.add_argument("--jvm-default", action="store_true", help="the JVM's own JIT and GC")
    p.add_argument("--conf", action="append", default=[], help="KEY=VALUE for the app's Spark")
    args = p.parse_args(argv)
    if not args.jvm_default:
        os.environ["JDK_JAVA_OPTIONS"] = TESTS_JVM
    storage = LocalStorage(Path(tempfile.mkdtemp(prefix="dstream-interval-cpu-")))
    storage.make_dirs()
    app = App(
        storage,
        [
            *("--master", "local-cluster[2,1,1024]"),
            *("--conf", f"spark.default.parallelism={args.parallelism}"),
            *(arg for setting in args.conf for arg in ("--conf", setting)),
            *("--batch", "2000ms", "--checkpoint-every", "4000ms", "--window-strategy", "replay"),
        ],
    )
    stop = threading.Event()
    rng = random.Random(1)

    def write() -> None:
        f = 0
        while not stop.wait(0.25):
            storage.put_input(f"f{f:05d}.txt", "\n".join(_lines(f, rng, 3)) + "\n")
            f += 1

    marks: list[tuple[int, dict[str, float]]] = []
    try:
        app.start()
        threading.Thread(target=write, daemon=True).start()
        assert app.proc is not None
        for n in (args.warmup, args.intervals):
            wait_for(lambda n=n: len(app.batches) >= n, 60 + 10 * n, f"{n} intervals", 0.05)
            marks.append((len(app.batches), cpu_by_kind(app.proc.pid)))
    finally:
        stop.set()
        app.kill9()
    (n0, before), (n1, after) = marks
    per_interval = {k: round((after[k] - before.get(k, 0.0)) / (n1 - n0), 3) for k in after}
    lags = [round((b["done_ms"] - b["batch_ms"]) / 1000, 1) for b in app.batches]
    report = {
        "parallelism": args.parallelism,
        "conf": args.conf,
        "jvm": "default" if args.jvm_default else TESTS_JVM,
        "intervals": [n0, n1],
        "cpu_s_per_interval": per_interval,
        "total_cpu_s_per_interval": round(sum(per_interval.values()), 3),
        "lag_s": lags,
        "at": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
