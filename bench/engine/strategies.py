"""Recovery strategies per stream, in the shape of StreamScope's Figure 15: the windowed
WordCount of the paper's Figure 10 (30 s window with the inverse, 1 s intervals, 3
executors on ``local-cluster``) under ``checkpoint`` (every 10 s), ``replay`` and
``replicate`` (two copies; checkpoints every 100 s, none in the run), each run once without
failure and ``--repeats`` times with the executor holding most of the latest state killed
-9 at interval ``--at``. Every faulty run's output is checked against the run without
failure before any time is reported.

Per strategy: the median interval and the p95 of the runs without failure (checkpoint spikes
show in the p95), the failure interval, and the time lost (the processing time of the
failure interval and the ones after it, less as many median intervals, until the intervals
are back within 1.5x of the median), medians over the repeats; bytes of checkpoint written.

    .venv/bin/python -m bench.engine.strategies --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from bench.paper.faults import RESULTS, plot, runs, series

STRATEGIES = ("checkpoint", "replay", "replicate")


def p95(values: list[int]) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))])


def time_lost(values: list[int], at: int, normal: float) -> float:
    """Processing time beyond ``normal`` from the failure interval until the intervals are
    back within 1.5x of it."""
    lost = 0.0
    for v in values[at - 1 :]:
        if v <= 1.5 * normal and lost:
            break
        lost += v - normal
    return lost


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--intervals", type=int, default=50)
    p.add_argument("--at", type=int, default=35, help="interval the kill falls in")
    p.add_argument("--repeats", type=int, default=3, help="faulty runs per strategy")
    p.add_argument("--rate", type=int, default=2000)
    args = p.parse_args()
    kills = ["0"] + [f"1@{args.at}"] * args.repeats
    rows, lines, raw = [], {}, {}
    for kind in STRATEGIES:
        result = runs(
            "wordcount",
            kills,
            ["--kill-target", "state", "--strategy", kind],
            intervals=args.intervals,
            rate=args.rate,
            window=30,
            checkpoint=10,
        )
        clean, faulty = series(result[0]), [series(r) for r in result[1:]]
        warm = clean[5:]  # the first intervals start JVMs and Python workers
        normal = statistics.median(warm)
        rows.append(
            {
                "strategy": kind,
                "median_ms": normal,
                "p95_ms": p95(warm),
                "max_ms": max(warm),
                "failure_ms": statistics.median(f[args.at - 1] for f in faulty),
                "lost_ms": statistics.median(time_lost(f, args.at, normal) for f in faulty),
                "lost_each_ms": [round(time_lost(f, args.at, normal)) for f in faulty],
                "checkpoint_bytes": result[0]["checkpoint_bytes"],
            }
        )
        lines[f"{kind}, no failure"] = clean
        lines[f"{kind}, 1 killed"] = faulty[0]
        raw[kind] = [{k: v for k, v in r.items() if k != "outputs"} for r in result]
    plot(
        RESULTS / "strategies.png",
        f"WordCount 30 s window: recovery strategies, state holder killed at {args.at}",
        lines,
        args.at,
    )
    (RESULTS / "strategies.json").write_text(json.dumps({"rows": rows, "runs": raw}, indent=1))
    print("| strategy | median | p95 (no failure) | max | failure interval | time lost "
          "(median of runs) | each run | checkpoint bytes |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        written = sum(r["checkpoint_bytes"].values())
        print(
            f"| {r['strategy']} | {r['median_ms']:.0f} ms | {r['p95_ms']:.0f} ms | "
            f"{r['max_ms']} ms | {r['failure_ms']:.0f} ms | {r['lost_ms']:.0f} ms | "
            f"{r['lost_each_ms']} | {written / 1e6:.1f} MB |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
