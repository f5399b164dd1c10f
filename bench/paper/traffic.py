"""The traffic-estimation application (paper Sec. 6.3.2, Fig. 15): accuracy, timeliness,
scaling and recovery.

- ``accuracy`` and ``timeliness`` (plain Python, the same estimator the Spark program runs):
  a synthetic city through a morning rush hour; online EM with history, online EM without
  history, and the batch baseline (EM over the last 30 minutes from the priors, every 30
  minutes), scored every minute against the ground truth: L1 error of the mean travel time
  per link (links with at least 5 observations today in the evaluation period), and the
  held-out log-likelihood (the true link travel times of held-out vehicles under the
  estimates, per traversal). Timeliness: when the estimated mean travel time over the
  corridor links first gets halfway from its pre-rush to its rush-hour level, against when
  the truth does. Batch results are counted as available the moment their window ends
  (which flatters the batch version).
- ``scaling`` (Spark, ``local-cluster[N,1,MB]``, one process per configuration, run by
  ``bench/paper/traffic_spark.py``): intervals of 5 s run back to back; per interval the
  processing time and the observations E-stepped (window + history); reported as E-step
  throughput and the arrival rate sustainable at 5 s intervals (arrivals per interval x
  5 s / processing time: the work per interval is proportional to the arrival rate).
- ``recovery``: the same on 2 executors, one killed (SIGKILL) in the middle of an interval;
  the estimates of every interval must equal those of the run without failure.

    python bench/paper/traffic.py --smoke                    # everything, tiny, < 1 min
    python bench/paper/traffic.py accuracy                   # pure Python (minutes)
    python bench/paper/traffic.py scaling --executors 1 2 --samples-list 150 300
    python bench/paper/traffic.py recovery
    python bench/paper/traffic.py report                     # tables and plots from the results
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
# apps/ first: this script's own name would otherwise shadow the ``traffic`` package.
sys.path.insert(0, str(ROOT / "apps"))
RESULTS = ROOT / "bench" / "results"

from traffic.em import EMSettings  # noqa: E402
from traffic.generate import TrafficConfig, write_dataset  # noqa: E402
from traffic.network import CityConfig  # noqa: E402

from bench.paper.traffic_accuracy import VARIANTS, accuracy, plot  # noqa: E402


# ---- Spark runs ------------------------------------------------------------------------------
def spark_runs(argv: list[str]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "bench.paper.traffic_spark", *argv],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=7200,
    )
    if done.returncode != 0:
        raise RuntimeError(f"traffic_spark.py {' '.join(argv)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def ensure_dataset(directory: str, size: int, days: int, trips: float) -> str:
    if not os.path.exists(os.path.join(directory, "city.json")):
        write_dataset(directory, CityConfig(size=size), TrafficConfig(trips_per_min=trips), days)
    return directory


def scaling(args: argparse.Namespace) -> list[dict[str, Any]]:
    data = ensure_dataset(args.data, args.size_spark, args.days, args.trips_per_min_spark)
    rows = []
    for executors in args.executors:
        for samples in args.samples_list:
            res = spark_runs(_spark_argv(args, data, executors, samples, "plain"))
            rows.append(_throughput(res["runs"][0], args, executors, samples))
            print(json.dumps(rows[-1]), flush=True)
    return rows


def _spark_argv(
    args: argparse.Namespace, data: str, executors: int, samples: int, runs: str
) -> list[str]:
    return [
        "--data", data, "--executors", str(executors), "--samples", str(samples),
        "--chains", str(min(args.chains, samples)), "--intervals", str(args.intervals),
        "--history-days", str(args.days), "--iterations", str(args.iterations),
        "--window-ms", str(args.window_s * 1000), "--batch-ms", str(args.spark_batch_ms),
        "--partitions", str(args.partitions), "--runs", runs,
    ]  # fmt: skip


def _throughput(
    run: dict[str, Any], args: argparse.Namespace, executors: int, samples: int
) -> dict[str, Any]:
    times = sorted(run["processing_ms"])[args.warmup :]
    proc = float(np.median([run["processing_ms"][t] for t in times]))
    estepped = float(np.median([run["estepped"][t] for t in times]))
    arrivals = float(np.mean([run["arrivals"][t] for t in times]))
    return {
        "executors": executors,
        "samples": samples,
        "processing_ms": proc,
        "estepped_per_interval": estepped,
        "estep_obs_per_s": estepped * args.iterations / (proc / 1000),
        "arrivals_per_s_at_5s": arrivals / (proc / 1000),
    }


def recovery(args: argparse.Namespace) -> dict[str, Any]:
    data = ensure_dataset(args.data, args.size_spark, args.days, args.trips_per_min_spark)
    res = spark_runs(
        _spark_argv(args, data, 2, args.samples_list[-1], f"plain,kill@{args.kill_at}")
    )
    plain, failed = res["runs"]
    return {
        "throughput": _throughput(plain, args, 2, args.samples_list[-1]),
        "killed": failed["killed"],
        "kill_at": args.kill_at,
        "equal": plain["digests"] == failed["digests"],
        "intervals": len(plain["digests"]),
        "processing_ms_plain": plain["processing_ms"],
        "processing_ms_failed": failed["processing_ms"],
    }


# ---- report -----------------------------------------------------------------------------------
def report(results: dict[str, Any]) -> str:
    """The results as markdown tables."""
    lines: list[str] = []
    acc = results.get("accuracy")
    if acc:
        s = acc["setup"]
        lines += [
            f"Accuracy: {s['links']} links ({s['observed_links']} observed), {s['days']} past "
            f"days, {s['batch_ms'] // 1000} s intervals, {s['samples']} samples, "
            f"{s['iterations']} EM iteration(s) per interval",
            "",
            "| | L1 error, observed links (s) | L1 error, all links (s) | held-out log-lik. |",
            "| --- | --- | --- | --- |",
        ]
        for name in (*VARIANTS, "prior"):
            r = acc[name]
            label = "speed-limit prior only" if name == "prior" else name
            lines.append(
                f"| {label} | {np.mean(r['l1']):.2f} | {np.mean(r['l1_all']):.2f} | {r['ll']:.3f} |"
            )
        tl = acc["timeliness"]
        lines += [
            "",
            f"Timeliness: rush hour from {tl['onset']}, the truth halfway at {tl['truth_half']};"
            " minutes until each estimate is halfway:",
            "",
            "| " + " | ".join(VARIANTS) + " |",
            "| --- | --- | --- |",
            "| " + " | ".join(_minutes(tl[n]) for n in VARIANTS) + " |",
        ]
    if results.get("scaling"):
        lines += [
            "",
            "| executors | samples | processing (ms) | E-steps/s | arrivals/s at 5 s |",
            "| --- | --- | --- | --- | --- |",
        ]
        for row in results["scaling"]:
            lines.append(
                f"| {row['executors']} | {row['samples']} | {row['processing_ms']:.0f} | "
                f"{row['estep_obs_per_s']:.0f} | {row['arrivals_per_s_at_5s']:.1f} |"
            )
    rec = results.get("recovery")
    if rec:
        lines += [
            "",
            f"Recovery: executor {rec['killed']} killed in interval {rec['kill_at']}; "
            f"estimates equal to the run without failure: {rec['equal']} "
            f"({rec['intervals']} intervals)",
        ]
    return "\n".join(lines)


def _minutes(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "what", nargs="*", default=["accuracy"], help="accuracy, scaling, recovery, report"
    )
    p.add_argument("--smoke", action="store_true", help="everything, tiny sizes (< 1 min)")
    p.add_argument(
        "--size", type=int, default=14, help="city size for accuracy (intersections per side)"
    )
    p.add_argument("--trips-per-min", type=float, default=150)
    p.add_argument("--days", type=int, default=10)
    p.add_argument("--start", default="07:00")
    p.add_argument("--eval-from", default="07:15")
    p.add_argument("--end", default="08:45")
    p.add_argument("--batch-ms", type=int, default=5000, help="interval of the accuracy runs")
    p.add_argument("--spark-batch-ms", type=int, default=5000, help="interval of the Spark runs")
    p.add_argument("--window-s", type=int, default=120)
    p.add_argument("--history-weight", type=float, default=EMSettings.history_weight)
    p.add_argument("--prior-strength", type=float, default=EMSettings.prior_strength)
    p.add_argument("--samples", type=int, default=300)
    p.add_argument("--chains", type=int, default=30)
    p.add_argument("--burn-in", type=int, default=5)
    p.add_argument("--iterations", type=int, default=2)
    p.add_argument("--batch-iterations", type=int, default=10)
    p.add_argument("--data", default=os.path.join(tempfile.gettempdir(), "dstream-traffic-bench"))
    p.add_argument("--size-spark", type=int, default=28)
    p.add_argument("--trips-per-min-spark", type=float, default=60)
    p.add_argument("--executors", type=int, nargs="+", default=[1, 2])
    p.add_argument("--samples-list", type=int, nargs="+", default=[150, 300])
    p.add_argument("--intervals", type=int, default=12)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument("--kill-at", type=int, default=6)
    p.add_argument("--out", default=str(RESULTS / "traffic.json"))
    args = p.parse_args(argv)
    if args.smoke:
        args = p.parse_args([
            "accuracy", "scaling", "recovery", "--size", "5", "--trips-per-min", "40",
            "--days", "1", "--start", "07:24", "--eval-from", "07:26", "--end", "07:40",
            "--batch-ms", "60000", "--window-s", "120", "--samples", "20", "--chains", "10",
            "--iterations", "1", "--batch-iterations", "2", "--size-spark", "4",
            "--trips-per-min-spark", "30", "--executors", "2", "--samples-list", "20",
            "--intervals", "2", "--warmup", "0", "--partitions", "2", "--kill-at", "2",
            "--data", tempfile.mkdtemp(prefix="traffic-smoke-"),
            "--out", os.path.join(tempfile.mkdtemp(prefix="traffic-smoke-out-"), "traffic.json"),
        ])  # fmt: skip
    results: dict[str, Any] = {}
    if os.path.exists(args.out):
        with open(args.out) as f:
            results = json.load(f)
    if "accuracy" in args.what:
        results["accuracy"] = accuracy(args)
    if args.smoke:
        # One Spark process (a second would double the start-up): the recovery runs, whose
        # run without failure also gives the scaling row.
        results["recovery"] = recovery(args)
        results["scaling"] = [results["recovery"]["throughput"]]
    else:
        if "scaling" in args.what:
            results["scaling"] = scaling(args)
        if "recovery" in args.what:
            results["recovery"] = recovery(args)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    if "accuracy" in results:
        plot(results["accuracy"], Path(args.out).with_name("traffic-timeliness.png"))
    print(report(results), flush=True)
    if args.smoke and "recovery" in results and not results["recovery"]["equal"]:
        print("recovery: estimates differ from the run without failure", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
