"""Tentative, then exact (PPA's Sec. 6 on D-Streams), measured with ``testbed.tentative``:
a top-k over ``updateStateByKey`` (priority 2) and a join with a 10 s window state
(priority 1), 2 s intervals on the system clock, every output ``tentative=True``, on the
testbed's standalone cluster (3 one-core workers; started here) or ``--master``.

1. Cost without a failure: ``--rounds`` runs with tentative outputs off and on, alternated,
   each 40 intervals back to back on a ManualClock; the median interval after the first five.
2. Two of three workers' executors killed -9 at ``--kill-at``, ``--repeats`` times: per
   output, how long after its interval ended each tentative and each exact result came
   (wall ms), the tentative results' fidelity and their measured accuracy.
3. The replica budget (a 4 s window): a budget that fits the larger state, planned with the outputs'
   priorities and without (``replica_priorities=False``), the same kill: the time-averaged,
   priority-weighted fidelity of what the outputs had while the exact results were late
   (PPA's Definition 3; an interval whose exact result came first counts 1).

    .venv/bin/python -m bench.engine.tentative [--rounds 2] [--repeats 2] [--parts 1 2 3]

Writes bench/results/tentative.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.paper.faults import RESULTS
from testbed.tentative import accuracy, oracle

ROOT = Path(__file__).resolve().parents[2]
PRIORITY = {"top": 2, "trending": 1}


def busy_cpu_s() -> float:
    """The machine's busy CPU seconds so far (every process: driver, executors, workers)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def run(master: str, *extra: str) -> dict[str, Any]:
    args = [sys.executable, "-m", "testbed.tentative", "--master", master, *extra]
    proc = subprocess.run(args, check=False, capture_output=True, text=True, timeout=1800, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    (result,) = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return dict(result)


def checked(result: dict[str, Any]) -> dict[str, Any]:
    """Per output: delays, fidelity, accuracy; raises if an exact result is wrong."""
    outputs = result["outputs"]
    times = sorted({int(t) for kind in outputs for t in outputs[kind]})
    want = oracle(
        times, result["zero_ms"], batch_ms=result["batch_ms"], window_s=result["window_s"]
    )
    out: dict[str, Any] = {}
    for kind, slots in outputs.items():
        rows = []
        for t in sorted(map(int, slots)):
            slot = slots[str(t)]
            if "exact" not in slot:
                continue
            exact = want[kind][t]
            same = (
                slot["exact"] == [list(kv) for kv in exact]
                if kind == "top"
                else slot["exact"] == {w: list(v) for w, v in exact.items()}
            )
            if not same or slot["exact_calls"] != 1:
                raise RuntimeError(f"{kind} at {t}: the exact result is wrong or repeated")
            row = {"time": t, "exact_after_ms": slot["exact_after_ms"]}
            if "tentative" in slot:
                row |= {
                    "tentative_after_ms": slot["tentative_after_ms"],
                    "fidelity": slot["fidelity"],
                    "accuracy": accuracy(kind, slot["tentative"], exact),
                    "pair_accuracy": accuracy(kind, slot["tentative"], exact, "pairs"),
                }
            rows.append(row)
        out[kind] = rows
    return out


def weighted_fidelity(rows: dict[str, Any], killed_at_ms: int) -> float:
    """PPA's Definition 3: over the results whose exact value came after the kill, the
    priority-weighted mean of the fidelity the output had first (a tentative result that
    came before the exact one; otherwise the exact one, 1)."""
    total = weight = 0.0
    for kind, kind_rows in rows.items():
        for r in kind_rows:
            if r["time"] + r["exact_after_ms"] < killed_at_ms:
                continue
            early = "fidelity" in r and r["tentative_after_ms"] < r["exact_after_ms"]
            total += PRIORITY[kind] * (r["fidelity"] if early else 1.0)
            weight += PRIORITY[kind]
    return total / weight if weight else 1.0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--master", default=None, help="default: a standalone cluster started here")
    p.add_argument("--seconds", type=float, default=50)
    p.add_argument("--kill-at", type=float, default=24)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--parts", type=int, nargs="+", default=[1, 2, 3])
    args = p.parse_args()
    if args.master is None:
        from testbed.standalone import StandaloneCluster

        with StandaloneCluster(workers=3, cores=1, memory_mb=1024) as cluster:
            return measure(cluster.master_url, args)
    return measure(args.master, args)


def measure(master: str, args: argparse.Namespace) -> int:
    out: dict[str, Any] = {}
    seconds, kill_at = str(args.seconds), str(args.kill_at)
    if 1 in args.parts:
        # On a ManualClock, 40 intervals back to back: an interval's wall time is its work
        # (on the system clock the runs' spread was larger than the cost measured). The
        # machine's busy CPU seconds over each whole run too (the JVMs' start included, the
        # same in both modes): CPU is what the feature adds, and it is less noisy than wall.
        medians: dict[str, list[float]] = {"off": [], "on": []}
        cpu: dict[str, list[float]] = {"off": [], "on": []}
        for _ in range(args.rounds):
            for mode in ("off", "on"):
                before = busy_cpu_s()
                r = run(master, "--manual", "40", "--kill", "0", "--tentative", mode)
                cpu[mode].append(round(busy_cpu_s() - before, 1))
                medians[mode].append(statistics.median(r["work_ms"][5:]))
        off, on = statistics.median(medians["off"]), statistics.median(medians["on"])
        pairwise = [b / a for a, b in zip(medians["off"], medians["on"], strict=True)]
        cpu_pairwise = [b / a for a, b in zip(cpu["off"], cpu["on"], strict=True)]
        out["overhead"] = {
            "off_ms": medians["off"],
            "on_ms": medians["on"],
            "ratio": on / off,
            "pairwise_median": statistics.median(pairwise),
            "off_cpu_s": cpu["off"],
            "on_cpu_s": cpu["on"],
            "cpu_ratio": statistics.median(cpu["on"]) / statistics.median(cpu["off"]),
            "cpu_pairwise_median": statistics.median(cpu_pairwise),
        }
        print(
            f"no failure: median interval off {off:.0f} ms, on {on:.0f} ms ({on / off:.3f}x, "
            f"median of pairs {statistics.median(pairwise):.3f}x); busy CPU per run off "
            f"{statistics.median(cpu['off']):.1f} s, on {statistics.median(cpu['on']):.1f} s "
            f"(median of pairs {statistics.median(cpu_pairwise):.3f}x)"
        )
    if 2 in args.parts:
        runs = []
        for _ in range(args.repeats):
            r = run(master, "--seconds", seconds, "--kill-at", kill_at, "--kill", "2")
            rows = checked(r)
            runs.append(
                {"rows": rows, "episodes": r["episodes"], "killed_at_ms": r["killed_at_ms"]}
            )
            for kind, kind_rows in rows.items():
                t = [x for x in kind_rows if "fidelity" in x]
                if not t:
                    print(f"{kind}: no tentative result")
                    continue
                gap = max(abs(x["fidelity"] - x["accuracy"]) for x in t)
                pairs = max(abs(x["fidelity"] - x["pair_accuracy"]) for x in t)
                print(
                    f"{kind}: {len(t)} tentative, after {[x['tentative_after_ms'] for x in t]} "
                    f"ms; exact after {[x['exact_after_ms'] for x in t]} ms; fidelity "
                    f"{[round(x['fidelity'], 3) for x in t]}; max |fidelity - accuracy| "
                    f"{gap:.3f} (against the pair-weighted accuracy {pairs:.3f})"
                )
        out["failures"] = runs
    if 3 in args.parts:
        # A 4 s window: a window state smaller than the running totals but more than half
        # of them, so that only the priorities make the totals the better buy.
        short = ("--window", "4")
        sized = run(master, "--seconds", seconds, "--kill", "0", "--tentative", "on", *short)
        budget = max(sized["state_bytes"].values()) * 1.1 / (1 << 20)
        plans: dict[str, Any] = {}
        for label, extra in (("priorities", []), ("blind", ["--blind"])):
            r = run(
                master,
                *("--seconds", seconds, "--kill-at", kill_at, "--kill", "2"),
                *("--budget-mb", f"{budget:.4f}", *short, *extra),
            )
            rows = checked(r)
            plans[label] = {
                "replicated": r["replicated"],
                "weighted_fidelity": weighted_fidelity(rows, r["killed_at_ms"]),
                "rows": rows,
            }
            print(
                f"budget {budget * 1024:.0f} KB ({label}): copies {r['replicated']}, "
                f"time-averaged weighted fidelity {plans[label]['weighted_fidelity']:.3f}"
            )
        out["budget"] = {"mb": budget, "state_bytes": sized["state_bytes"], "plans": plans}
    path = RESULTS / "tentative.json"
    merged = json.loads(path.read_text()) if path.exists() else {}
    merged.update(out)
    path.write_text(json.dumps(merged, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
