"""Executors that follow the load (``StreamingSettings(elastic=...)``) against fixed
clusters, in one run: a keyed running total on ``local-cluster`` whose load steps up (each
record of a heavy interval waits ``--cost-ms`` in its task) for ``--heavy`` intervals and
back down (``python -m testbed.elastic``), run

- on 1 executor and on 3 executors, without a policy (the peers);
- under ``ElasticPolicy(min 1, max 3)`` removing executors by decommissioning (the blocks
  move) and by killing (the states checkpointed first, what they held rebuilt).

Every run's totals are checked against the oracle before anything is reported. Reports, per
run and phase, the median and largest interval (wall time of its jobs), the executor-seconds
used (executors working x the interval's length in real time, the batch interval or its
work if longer: what a cluster manager bills), the steps
taken, and how many heavy intervals passed before the interval came back under the batch
interval (the latency bound) after the load stepped up.

    .venv/bin/python -m bench.engine.elastic
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parents[1] / "results"
REPO = Path(__file__).resolve().parents[2]


def run(*options: str) -> dict[str, Any]:
    args = [sys.executable, "-m", "testbed.elastic", *options]
    proc = subprocess.run(args, check=True, capture_output=True, text=True, cwd=REPO)
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    result: dict[str, Any] = json.loads(line)
    if result["wrong"]:
        raise RuntimeError(f"{options}: intervals {result['wrong']} differ from the oracle")
    return result


def phases(result: dict[str, Any]) -> dict[str, list[int]]:
    p = result["phases"]
    bounds = {
        "light": (1, p["light"]),
        "heavy": (p["light"] + 1, p["light"] + p["heavy"]),
        "light after": (p["light"] + p["heavy"] + 1, result["intervals"]),
    }
    return {name: list(range(lo, hi + 1)) for name, (lo, hi) in bounds.items()}


def summary(name: str, result: dict[str, Any], batch_ms: int) -> dict[str, Any]:
    work = {int(i): ms for i, ms in result["work_ms"].items()}
    live = {int(i): n for i, n in result["live"].items()}
    row: dict[str, Any] = {"run": name, "steps": [a["reason"] for a in result["actions"]]}
    for phase, intervals in phases(result).items():
        row[phase] = {
            "median_ms": statistics.median(work[i] for i in intervals),
            "max_ms": max(work[i] for i in intervals),
            # In real time an interval lasts the batch interval, or its work if longer.
            "executor_s": round(sum(live[i] * max(batch_ms, work[i]) for i in intervals) / 1000, 1),
        }
    heavy = phases(result)["heavy"]
    over = [i for i in heavy if work[i] > batch_ms]
    # Heavy intervals until the last one over the bound (the rest stayed under it).
    row["heavy_over_bound"] = len(over)
    row["back_under_after"] = (over[-1] - heavy[0] + 1) if over else 0
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--light", type=int, default=6)
    p.add_argument("--heavy", type=int, default=16)
    p.add_argument("--light-after", type=int, default=8)
    p.add_argument("--batch-ms", type=int, default=5000)
    args = p.parse_args()
    common = [
        f"--light={args.light}",
        f"--heavy={args.heavy}",
        f"--light-after={args.light_after}",
        f"--batch-ms={args.batch_ms}",
    ]
    configs = {
        "fixed, 1 executor": [*common, "--no-policy", "--executors=1"],
        "fixed, 3 executors": [*common, "--no-policy"],
        "elastic 1..3, decommission": [*common, "--decommission"],
        "elastic 1..3, kill": common,
    }
    rows, raw = [], {}
    for name, options in configs.items():
        print(f"running {name} ...", file=sys.stderr, flush=True)
        raw[name] = run(*options)
        rows.append(summary(name, raw[name], args.batch_ms))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "elastic.json").write_text(json.dumps({"rows": rows, "runs": raw}) + "\n")
    print(
        "| run | light: median / max ms, executor-s | heavy: median / max ms, executor-s | "
        "light after | heavy intervals over the bound | steps |"
    )
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        cells = [
            f"{r[ph]['median_ms']:.0f} / {r[ph]['max_ms']} ms, {r[ph]['executor_s']} s"
            for ph in ("light", "heavy", "light after")
        ]
        print(
            f"| {r['run']} | {' | '.join(cells)} | {r['heavy_over_bound']} "
            f"(last at heavy interval {r['back_under_after']}) | {len(r['steps'])} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
