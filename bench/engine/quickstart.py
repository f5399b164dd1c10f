"""What an interval of the quick start's program costs: `make run`'s word count (a rate
source, a 30 s window with an inverse, the top words printed) on local[2], 1 s intervals.

Runs ``apps/wordcount.py --source rate`` as a subprocess for ``--seconds`` and reads the
processing time it prints for each interval; the first ``--warmup`` intervals (JVM and
Python workers starting) are left out. ``--tree DIR`` (repeatable) runs the same program
from other checkouts of this repository too, in alternating order over ``--rounds`` rounds,
so a change can be compared with the code before it in the same run on the same machine:

    .venv/bin/python -m bench.engine.quickstart --rate 2000 --seconds 45
    git worktree add /tmp/before <commit>   # then, with its dstream/jars/ copied or linked:
    .venv/bin/python -m bench.engine.quickstart --tree . --tree /tmp/before --rounds 2

Writes bench/results/quickstart.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PROCESSING = re.compile(r"processing (\d+) ms, total delay (\d+) ms")


def one_run(tree: Path, rate: int, seconds: int) -> list[tuple[int, int]]:
    """(processing ms, total delay ms) of each interval of one run from ``tree``."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    args = [sys.executable, str(tree / "apps" / "wordcount.py"), "--source", "rate"]
    args += ["--rate", str(rate), "--seconds", str(seconds)]
    proc = subprocess.run(
        args, check=False, env=env, cwd=tree, capture_output=True, text=True, timeout=seconds + 300
    )
    if proc.returncode != 0:
        raise SystemExit(f"{tree}: the program failed:\n{proc.stderr[-3000:]}")
    return [(int(m[1]), int(m[2])) for m in PROCESSING.finditer(proc.stdout)]


def summary(intervals: list[tuple[int, int]]) -> dict[str, Any]:
    processing = sorted(p for p, _ in intervals)
    delay = sorted(d for _, d in intervals)

    def p95(xs: list[int]) -> int:
        return xs[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]

    return {
        "intervals": len(intervals),
        "processing_median_ms": statistics.median(processing),
        "processing_p95_ms": p95(processing),
        "total_delay_median_ms": statistics.median(delay),
        "total_delay_p95_ms": p95(delay),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--rate", type=int, default=2000, help="records per second")
    p.add_argument("--seconds", type=int, default=45, help="each run's length")
    p.add_argument("--warmup", type=int, default=5, help="first intervals left out")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--tree", action="append", type=Path, help="checkouts to run (default: .)")
    p.add_argument("--out", type=Path, default=HERE.parent / "results" / "quickstart.json")
    args = p.parse_args(argv)
    trees = [t.resolve() for t in (args.tree or [HERE.parents[1]])]
    got: dict[str, list[tuple[int, int]]] = {str(t): [] for t in trees}
    for r in range(args.rounds):
        for tree in trees if r % 2 == 0 else list(reversed(trees)):
            intervals = one_run(tree, args.rate, args.seconds)[args.warmup :]
            got[str(tree)] += intervals
            print(f"round {r + 1} {tree}: {summary(intervals)}", flush=True)
    report = {
        "rate": args.rate,
        "seconds": args.seconds,
        "rounds": args.rounds,
        "trees": {t: summary(v) for t, v in got.items()},
    }
    for tree, s in report["trees"].items():
        print(f"{tree}: {s}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
