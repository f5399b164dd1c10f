"""Where a replay's time goes: the CPU of each kind of process per replayed interval.

Writes ``--intervals`` files of 2,000 100-byte lines with modification times one second apart
in the past (no live run), then replays them with StreamingContext.replay at full speed,
``--rounds`` times over the same files on one SparkContext (local[2]), the first round
unreported (the JVM's compilers, Python workers forked). Per round: wall time per interval
and CPU-seconds per interval of the driver's Python, the driver's JVM (which on local[2]
also runs the tasks) and the Python workers, from ``/proc/<pid>/stat`` of the process tree
(``bench.engine.interval_cpu.cpu_by_kind``).
Add a JFR recording of the driver's JVM to see inside it (bench/README.md, "Live queries
and replay").

    .venv/bin/python -m bench.engine.replay_cpu
    .venv/bin/python -m bench.engine.replay_cpu --program window --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from bench.common.spark import spark_context
from bench.engine.interval_cpu import cpu_by_kind
from bench.engine.replay import program
from dstream import StreamingContext, Time
from dstream.sources.textgen import generate_lines


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--intervals", type=int, default=30)
    p.add_argument("--records-per-interval", type=int, default=2000)
    p.add_argument("--program", choices=("light", "window"), default="light")
    p.add_argument("--rounds", type=int, default=3, help="replays; the first is not reported")
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dstream-bench-replay-cpu-"))
    indir = work / "in"
    indir.mkdir()
    start = int(time.time()) - args.intervals - 10
    for i in range(args.intervals):
        path = indir / f"f{i:05d}.txt"
        path.write_text("\n".join(generate_lines(i, args.records_per_interval, 100)) + "\n")
        os.utime(path, (start + i + 0.5, start + i + 0.5))
    sc = spark_context("dstream-bench-replay-cpu")
    rounds = []
    try:
        for r in range(args.rounds):
            before, began = cpu_by_kind(os.getpid()), time.perf_counter()
            report = StreamingContext.replay(
                lambda r=r: program(sc, str(indir), str(work / f"out-{r}"), args.program),
                Time(start * 1000),
                Time((start + args.intervals) * 1000),
            )
            seconds, after = time.perf_counter() - began, cpu_by_kind(os.getpid())
            per_kind = {k: v - before.get(k, 0.0) for k, v in after.items()}
            row = {
                "round": r,
                "intervals": report.intervals,
                "ms_per_interval": round(1000 * seconds / report.intervals),
                "cpu_s_per_interval": {
                    k: round(v / report.intervals, 3) for k, v in sorted(per_kind.items())
                },
            }
            print(json.dumps(row), flush=True)
            if r > 0:
                rounds.append(row)
    finally:
        sc.stop()
    print(json.dumps({"program": args.program, "rounds": rounds}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
