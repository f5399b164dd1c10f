"""Path inference and per-link timing in the traffic estimator (plain Python, the estimator
the Spark program runs), against exact map-matched fixes.

The same trips of the same morning, five ways: exact fixes (one path each, the model until
now), with and without per-link timing; GPS fixes with Gaussian noise (``--gps-noise-m``)
and every observation's candidate paths weighed in the E-step, with and without per-link
timing; and the same noisy fixes matched to their most likely path only (what a map
matcher ahead of the estimator would hand it). Scored as ``bench/paper/traffic.py
accuracy`` scores (L1 error of the mean per observed link every minute, the held-out
log-likelihood, and when the corridor estimate gets halfway to its rush-hour level), online
EM with history.

    .venv/bin/python -m bench.paper.traffic_paths                 # ~35 CPU min, 2 processes
    .venv/bin/python -m bench.paper.traffic_paths --smoke         # tiny, < 1 min

Results: ``bench/results/traffic-paths.json`` and a markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "apps"))

from traffic.em import EMSettings
from traffic.estep import MIN_PATH_WEIGHT, path_weights
from traffic.observations import Observation

from bench.paper.traffic_accuracy import Setup, run_online, setup, timeliness, truth_series

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "results"

# name: (GPS noise?, paths, per-link timing)
VARIANTS: dict[str, tuple[bool, str, bool]] = {
    "exact fixes": (False, "all", False),
    "exact fixes, per-link timing": (False, "all", True),
    "noisy fixes, candidate paths": (True, "all", False),
    "noisy fixes, candidate paths, per-link timing": (True, "all", True),
    "noisy fixes, most likely path only": (True, "best", False),
}


def most_likely_only(observations: list[Observation]) -> list[Observation]:
    """Each observation with its highest-prior path alone (a map matcher's answer)."""
    return [
        Observation(o.id, o.day, o.t_end_ms, o.duration_s, (replace(o.paths[0], log_prior=0.0),))
        for o in observations
    ]


def run_variant(args: argparse.Namespace, name: str) -> dict[str, Any]:
    noisy, paths, per_link = VARIANTS[name]
    began = time.process_time()
    s = setup(args, args.gps_noise_m if noisy else 0.0)
    if paths == "best":
        s = Setup(
            s.city,
            most_likely_only(s.today),
            most_likely_only(s.past),
            s.scorer,
            s.settings,
            s.evals,
            s.end,
            s.observed_count,
        )
    settings: EMSettings = replace(s.settings, link_timing=per_link)
    record = run_online(s, settings, args.batch_ms).summary()
    record["cpu_s"] = round(time.process_time() - began, 1)
    record["observations"] = len(s.today)
    record["paths_per_observation"] = float(np.mean([len(o.paths) for o in s.today]))
    # How many candidates the E-step keeps, under the speed-limit priors.
    kept = [len(path_weights(o, s.scorer.priors, settings.sampler)) for o in s.today]
    record["paths_kept_at_priors"] = float(np.mean(kept))
    if name == next(iter(VARIANTS)):
        record["truth"] = truth_series(s, args.batch_ms)
        record["observed_links"] = s.observed_count
    return record


def study(args: argparse.Namespace) -> dict[str, Any]:
    names = args.only or list(VARIANTS)
    names = [next(iter(VARIANTS)), *[n for n in names if n != next(iter(VARIANTS))]]
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        runs = dict(zip(names, pool.map(run_variant, [args] * len(names), names), strict=True))
    out: dict[str, Any] = {**runs, "truth": runs[names[0]].pop("truth")}
    s = setup(args)
    out["timeliness"] = timeliness(out, s.city, s.scorer.corridor, tuple(names))
    out["variants"] = names
    out["setup"] = {**vars(args), "min_path_weight": MIN_PATH_WEIGHT}
    return out


def report(out: dict[str, Any]) -> str:
    s = out["setup"]
    lines = [
        f"{s['size']} x {s['size']} city, {s['trips_per_min']} trips/min, {s['days']} past days, "
        f"GPS noise sigma {s['gps_noise_m']} m, {s['samples']} samples, online EM with history, "
        f"scored every minute {s['eval_from']}-{s['end']}",
        "",
        "| fixes and paths | L1 error, observed links (s) | held-out log-lik. | halfway after "
        "the truth (min) | paths per obs. (kept at priors) | CPU s |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name in out.get("variants", VARIANTS):
        r = out[name]
        lag = out["timeliness"][name]
        lines.append(
            f"| {name} | {np.mean(r['l1']):.2f} | {r['ll']:.3f} | "
            f"{'never' if lag is None else f'{lag:.1f}'} | {r['paths_per_observation']:.2f} "
            f"({r['paths_kept_at_priors']:.2f}) | {r['cpu_s']:.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--smoke", action="store_true", help="tiny sizes (< 1 min)")
    p.add_argument("--size", type=int, default=10)
    p.add_argument("--trips-per-min", type=float, default=120)
    p.add_argument("--days", type=int, default=3)
    p.add_argument("--start", default="07:05")
    p.add_argument("--eval-from", default="07:15")
    p.add_argument("--end", default="08:05")
    p.add_argument("--batch-ms", type=int, default=5000)
    p.add_argument("--window-s", type=int, default=120)
    p.add_argument("--history-weight", type=float, default=EMSettings.history_weight)
    p.add_argument("--prior-strength", type=float, default=EMSettings.prior_strength)
    p.add_argument("--samples", type=int, default=60)
    p.add_argument("--chains", type=int, default=20)
    p.add_argument("--burn-in", type=int, default=5)
    p.add_argument("--iterations", type=int, default=1)
    p.add_argument("--gps-noise-m", type=float, default=15.0)
    p.add_argument("--jobs", type=int, default=2, help="variants run side by side")
    p.add_argument(
        "--only",
        nargs="+",
        choices=list(VARIANTS),
        help="these variants (and the first, which the others are compared with)",
    )
    p.add_argument("--out", default=str(RESULTS / "traffic-paths.json"))
    args = p.parse_args(argv)
    if args.smoke:
        smoke = ["--size", "5", "--trips-per-min", "40", "--days", "1", "--start", "07:24"]
        smoke += ["--eval-from", "07:26", "--end", "07:34", "--batch-ms", "30000"]
        smoke += ["--samples", "20", "--chains", "10"]
        smoke += ["--out", os.path.join(tempfile.mkdtemp(prefix="traffic-paths-"), "out.json")]
        args = p.parse_args([*smoke, "--jobs", str(args.jobs)])
    out = study(args)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print(report(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
