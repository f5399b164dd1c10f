"""Bounded-error recovery (``approximateRecovery``) in the shape of AF-Stream's Figures 6-8:
throughput and error against the bound Θ, and error against the number of failures, beside
exact recovery (lineage from the last checkpoint) and a second copy in memory
(``state_replicas=2``), all on the same workload in one process per part.

The workload is ``testbed.faults keyed``: running word counts (``updateStateByKey``) of the
rate source's Zipf-like words, 2,000 records/s (~30,000 words an interval), 6 input and 6
state partitions, 1 s intervals on a ManualClock (back to back: an interval's time is its
work), checkpoints every 10 s, on ``local-cluster[3,1,768]``; kills are SIGKILL of one
executor JVM 0.2 s into the interval. Error = the sum over words of |count - exact| (it
bounds every word's error), against the oracle from the rate source's own generator.

1. No failure, 30 intervals: per configuration the median interval (intervals 6-30), the
   throughput that gives (records an interval / median), and the bytes copied an interval
   (approximate: the copy files; state_replicas=2: the second copy of each interval's state).
2. Five failures (intervals 6, 11, 16, 21, 26), per Θ: the error after each failure.
3. One failure (interval 20), ``--repeats`` times per configuration: the failure interval's
   time and the time lost (the intervals from the failure on, less the median, until they
   are back within 1.5x of it).

    .venv/bin/python -m bench.engine.approximate [--repeats 3] [--parts 1 2 3]

Writes bench/results/approximate.json and approximate.png.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.engine.strategies import time_lost
from bench.paper.faults import RESULTS, series

ROOT = Path(__file__).resolve().parents[2]
THETAS = (0.0, 1e4, 1e5, 1e6)
RATE, PARTITIONS = 2000, 6


def run(kills: list[str], configs: list[tuple[str, int]], intervals: int, extra: list[str]) -> Any:
    """One process, one run per (theta or "exact", state replicas) with its kill."""
    args = [sys.executable, "-m", "testbed.faults", "keyed", "--intervals", str(intervals)]
    args += ["--checkpoint", "10", "--rate", str(RATE), "--partitions", str(PARTITIONS)]
    args += ["--measure-state", *extra]
    for kill, (theta, replicas) in zip(kills, configs, strict=True):
        args += ["--kill", kill, "--theta", theta, "--state-replicas", str(replicas)]
    proc = subprocess.run(args, check=False, capture_output=True, text=True, timeout=7200, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def errors(result: dict[str, Any]) -> dict[int, int]:
    from testbed.faults import keyed_oracle

    want = keyed_oracle(len(result["outputs"]), RATE, PARTITIONS)["outputs"]
    out = {}
    for t, records in result["outputs"].items():
        got, exact = dict(map(tuple, records)), dict(map(tuple, want[t]))
        out[int(t)] = sum(abs(got.get(w, 0) - exact.get(w, 0)) for w in got.keys() | exact.keys())
    return out


def label(theta: str, replicas: int) -> str:
    if theta == "exact":
        return "exact (lineage)" if replicas == 1 else f"state_replicas={replicas}"
    return f"approximate, Θ={float(theta):g}"


def copied_per_interval(result: dict[str, Any]) -> float:
    """Bytes a configuration copies an interval beyond the one cached copy."""
    n = len(result["processing_ms"])
    if result["approximate"]:
        return sum(a["copy_bytes"] for a in result["approximate"].values()) / n
    extra = result["state_replicas"] - 1
    return extra * sum(sum(v.values()) for v in result["state_bytes_by_interval"].values()) / n


def part1(intervals: int) -> list[dict[str, Any]]:
    configs = [("exact", 1), ("exact", 2), *((f"{t:g}", 1) for t in THETAS)]
    # A first run warms the executors' JVMs and Python workers up; it is not reported.
    results = run(["0"] * (len(configs) + 1), [("exact", 1), *configs], intervals, [])[1:]
    rows = []
    for (theta, replicas), r in zip(configs, results, strict=True):
        warm = series(r)[5:]
        median = statistics.median(warm)
        records = RATE  # records an interval (1 s)
        assert max(errors(r).values()) == 0, f"{theta}: an error without a failure"
        rows.append(
            {
                "config": label(theta, replicas),
                "theta": None if theta == "exact" else float(theta),
                "replicas": replicas,
                "median_ms": median,
                "throughput_rps": records / (median / 1000),
                "copied_bytes_per_interval": copied_per_interval(r),
                "state_bytes_per_interval": statistics.median(
                    sum(v.values()) for v in r["state_bytes_by_interval"].values()
                ),
            }
        )
    return rows


def part2(intervals: int) -> list[dict[str, Any]]:
    kills_at = [6, 11, 16, 21, 26]
    extra = [f"--also-kill-at={i}" for i in kills_at[1:]]
    thetas = [t for t in THETAS if t > 0]
    configs = [(f"{t:g}", 1) for t in thetas]
    results = run([f"1@{kills_at[0]}"] * len(configs), configs, intervals, extra)
    rows = []
    for theta, r in zip(thetas, results, strict=True):
        err = errors(r)
        after = [err[(k + 1) * 1000] for k in kills_at]  # once the restore is folded in
        (approx,) = r["approximate"].values()
        rows.append(
            {
                "theta": theta,
                "error_after_each_failure": after,
                "final_error": err[max(err)],
                "restores": len(approx["restores"]),
                "within_bound": max(err.values()) <= theta,
            }
        )
    return rows


def part3(intervals: int, repeats: int, at: int) -> list[dict[str, Any]]:
    configs = [("exact", 1), ("exact", 2), ("1e+06", 1), ("1e+05", 1)]
    rows = []
    for theta, replicas in configs:
        runs = run(
            ["0"] + [f"1@{at}"] * repeats,
            [(theta, replicas)] * (repeats + 1),
            intervals,
            ["--kill-target", "state"],
        )
        normal = statistics.median(series(runs[0])[5:])
        faulty = [series(r) for r in runs[1:]]
        rows.append(
            {
                "config": label(theta, replicas),
                "median_ms": normal,
                "failure_ms": statistics.median(f[at - 1] for f in faulty),
                "failure_each_ms": [f[at - 1] for f in faulty],
                "lost_ms": statistics.median(time_lost(f, at, normal) for f in faulty),
                "error_after": [errors(r)[max(map(int, r["outputs"]))] for r in runs[1:]],
            }
        )
    return rows


def plot(rows1: list[dict[str, Any]], rows2: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(13, 4))
    approx = [r for r in rows1 if r["theta"] is not None and r["theta"] > 0]
    xs = [r["theta"] for r in approx]
    left.plot(xs, [r["throughput_rps"] / 1000 for r in approx], marker="o", label="approximate")
    for r in rows1:
        if r["theta"] is None or r["theta"] == 0:
            left.axhline(r["throughput_rps"] / 1000, linestyle="--", linewidth=1, label=r["config"])
    left.set_xscale("log")
    left.set_xlabel("Θ (counts)")
    left.set_ylabel("throughput (k records/s)")
    left.set_title("throughput, no failure")
    left.legend(fontsize=7)
    middle.plot(xs, [r["copied_bytes_per_interval"] / 1000 for r in approx], marker="o")
    for r in rows1:
        if r["replicas"] == 2:
            middle.axhline(r["copied_bytes_per_interval"] / 1000, linestyle="--", label=r["config"])
    middle.set_xscale("log")
    middle.set_xlabel("Θ (counts)")
    middle.set_ylabel("bytes copied an interval (KB)")
    middle.set_title("copy cost")
    middle.legend(fontsize=7)
    for r in rows2:
        right.plot(
            range(1, 6), r["error_after_each_failure"], marker="o", label=f"Θ={r['theta']:g}"
        )
    right.set_yscale("symlog")
    right.set_xlabel("failures so far")
    right.set_ylabel("Σ |count - exact|")
    right.set_title("error against failures (≤ Θ)")
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(RESULTS / "approximate.png", dpi=100)
    plt.close(fig)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--intervals", type=int, default=30)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--at", type=int, default=20)
    p.add_argument("--parts", type=int, nargs="+", default=[1, 2, 3])
    args = p.parse_args()
    out: dict[str, Any] = {}
    if 1 in args.parts:
        out["no_failure"] = part1(args.intervals)
        print("| configuration | median interval | throughput | copied an interval | state |")
        print("| --- | --- | --- | --- | --- |")
        for r in out["no_failure"]:
            print(
                f"| {r['config']} | {r['median_ms']:.0f} ms | {r['throughput_rps'] / 1000:.2f}k/s "
                f"| {r['copied_bytes_per_interval'] / 1000:.1f} KB | "
                f"{r['state_bytes_per_interval'] / 1000:.0f} KB |"
            )
    if 2 in args.parts:
        out["failures"] = part2(args.intervals)
        print("| Θ | error after failures 1-5 | restores | within Θ |")
        print("| --- | --- | --- | --- |")
        for r in out["failures"]:
            print(
                f"| {r['theta']:g} | {r['error_after_each_failure']} | {r['restores']} | "
                f"{r['within_bound']} |"
            )
    if 3 in args.parts:
        out["one_failure"] = part3(args.intervals, args.repeats, args.at)
        print("| configuration | median | failure interval (median) | each | time lost | error |")
        print("| --- | --- | --- | --- | --- | --- |")
        for r in out["one_failure"]:
            print(
                f"| {r['config']} | {r['median_ms']:.0f} ms | {r['failure_ms']:.0f} ms | "
                f"{r['failure_each_ms']} | {r['lost_ms']:.0f} ms | {r['error_after']} |"
            )
    previous = RESULTS / "approximate.json"
    merged = json.loads(previous.read_text()) if previous.exists() else {}
    merged.update(out)
    previous.write_text(json.dumps(merged, indent=1) + "\n")
    if "no_failure" in merged and "failures" in merged:
        plot(merged["no_failure"], merged["failures"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
