"""Interval processing time with a straggling executor, speculation off and on (the
paper's Figure 13), on a standalone cluster whose three workers are distinct hosts
(127.0.0.2-4: Spark never runs a task's speculative copy on a host where it already runs,
so ``local-cluster``, one host, cannot show speculation).

The straggler is real: executor 0's JVM and its Python workers are stopped with SIGSTOP for
--duty of every 200 ms and resumed with SIGCONT. Four runs of each workload, each in its own
process and SparkContext on the same cluster: no straggler; straggler, speculation off;
straggler, speculation on (``dstream.sparkconf.SPECULATION``); and the same with executor
avoidance (``StreamingSettings.executor_avoidance``: the straggling executor is removed after
3 slow intervals of 5 and asked back after --cooldown). Outputs are compared with the
run without straggler before any time is reported.

    .venv/bin/python -m bench.paper.stragglers --duty 0.8
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # testbed

from bench.paper.faults import plot, series

RESULTS = Path(__file__).resolve().parents[1] / "results"


def one(master: str, workload: str, intervals: int, extra: list[str]) -> dict[str, Any]:
    args = [sys.executable, "-m", "testbed.faults", workload, "--master", master]
    args += ["--intervals", str(intervals), "--kill", "0", *extra]
    proc = subprocess.run(args, check=False, capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    (result,) = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return dict(result)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--duty", type=float, default=0.8, help="fraction of time executor 0 stops")
    p.add_argument("--intervals", type=int, default=40)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--cooldown", type=float, default=20.0, help="avoidance cooldown, s")
    args = p.parse_args()
    from testbed.standalone import StandaloneCluster

    RESULTS.mkdir(exist_ok=True)
    configs = {
        "no straggler": [],
        "straggler, speculation off": ["--slow", str(args.duty)],
        "straggler, speculation on": ["--slow", str(args.duty), "--speculation"],
        "straggler, speculation on, avoidance": [
            *("--slow", str(args.duty), "--speculation", "--avoid"),
            *("--avoid-cooldown", str(args.cooldown)),
        ],
    }
    print(f"executor 0 stopped {args.duty:.0%} of the time; median ms per interval:\n")
    print("| workload | " + " | ".join(configs) + " | speculative copies (on) | avoidance |")
    print("| --- " * (len(configs) + 3) + "|")
    with StandaloneCluster(workers=3, cores=1, memory_mb=1024) as cluster:
        for workload in ("grep", "wordcount"):
            results = {
                label: one(cluster.master_url, workload, args.intervals, extra)
                for label, extra in configs.items()
            }
            reference = results["no straggler"]["outputs"]
            for label, r in results.items():
                if r["outputs"] != reference:
                    raise RuntimeError(f"{workload}: '{label}' changed the output")
            medians = {
                label: statistics.median(series(r)[args.warmup :]) for label, r in results.items()
            }
            copies = results["straggler, speculation on"]
            actions = results["straggler, speculation on, avoidance"]["executor_actions"]
            done = ", ".join(f"{a['kind']} {a['executor']} at {a['after_s']} s" for a in actions)
            print(
                f"| {workload} | "
                + " | ".join(f"{m:.0f}" for m in medians.values())
                + f" | {copies['speculative_tasks']} launched, {copies['speculative_won']} won"
                + f" | {done or 'none'} |",
                flush=True,
            )
            plot(
                RESULTS / f"fig13-{workload}.png",
                f"{workload}: one executor stopped {args.duty:.0%} of the time",
                {label: series(r) for label, r in results.items()},
                0,
            )
            slim = {k: {x: y for x, y in r.items() if x != "outputs"} for k, r in results.items()}
            (RESULTS / f"fig13-{workload}.json").write_text(json.dumps(slim, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
