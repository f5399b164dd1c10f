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
  ``bench/traffic_spark.py``): intervals of 5 s run back to back; per interval the
  processing time and the observations E-stepped (window + history); reported as E-step
  throughput and the arrival rate sustainable at 5 s intervals (arrivals per interval x
  5 s / processing time: the work per interval is proportional to the arrival rate).
- ``recovery``: the same on 2 executors, one killed (SIGKILL) in the middle of an interval;
  the estimates of every interval must equal those of the run without failure.

    python bench/traffic.py --smoke                    # everything, tiny, < 1 min
    python bench/traffic.py accuracy                   # pure Python (minutes)
    python bench/traffic.py scaling --executors 1 2 --samples 100 300
    python bench/traffic.py recovery
    python bench/traffic.py report                     # tables and plots from the results
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "apps"))
RESULTS = ROOT / "bench" / "results"

from traffic.em import EMSettings, OnlineEM, Priors, batch_em  # noqa: E402
from traffic.estep import SamplerSettings  # noqa: E402
from traffic.generate import TrafficConfig, intervals, simulate_day, write_dataset  # noqa: E402
from traffic.metrics import heldout_loglik, l1_error, parameter_arrays  # noqa: E402
from traffic.network import City, CityConfig  # noqa: E402

MIN = 60_000


def _tod(text: str) -> int:
    h, m = text.split(":")
    return (int(h) * 60 + int(m)) * MIN


def _hhmm(ms: float) -> str:
    s = int(ms // 1000)
    return f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"


# ---- accuracy and timeliness (plain Python) ----------------------------------------------------
def accuracy(args: argparse.Namespace) -> dict[str, Any]:
    began = time.process_time()
    city = City.build(CityConfig(size=args.size))
    traffic = TrafficConfig(
        start_ms=_tod(args.start), end_ms=_tod(args.end), trips_per_min=args.trips_per_min
    )
    days = [simulate_day(city, traffic, d) for d in range(args.days + 1)]
    today, past = days[0], [o for d in days[1:] for o in d.observations]
    eval_from, end = _tod(args.eval_from), traffic.end_ms
    seen = np.zeros(city.n_links)
    for o in today.observations:
        if eval_from < o.t_end_ms <= end:
            for link, _ in o.terms():
                seen[link] += 1
    observed = seen >= 5
    corridor = city.corridor & observed
    sampler = SamplerSettings(samples=args.samples, chains=args.chains, burn_in=args.burn_in)
    base = EMSettings(
        sampler=sampler,
        iterations=args.iterations,
        window_ms=args.window_s * 1000,
        half_life_ms=args.window_s * 500,
        history_days=args.days,
        history_weight=args.history_weight,
        prior_strength=args.prior_strength,
    )
    variants = {
        "online + history": base,
        "online, no history": EMSettings(**{**base.__dict__, "history_days": 0}),
    }
    held_by_minute: dict[int, list[Any]] = {}
    for h in today.held_out:
        held_by_minute.setdefault(-(-h.enter_ms // MIN) * MIN, []).append(h)
    evals = list(range(eval_from, end + 1, MIN))
    out: dict[str, Any] = {"truth": _series(city, city.truth_mean_s, corridor, traffic, args)}
    priors = Priors(city, base)

    def score(state: dict[int, Any], t: int) -> tuple[float, float, float, list[Any]]:
        k, theta = parameter_arrays(state, priors)
        mean = k * theta
        held = held_by_minute.get(t, [])
        return (
            l1_error(mean, city.truth_mean_s(t), observed),
            l1_error(mean, city.truth_mean_s(t)),
            float(mean[corridor].mean()),
            held,
        )

    for name, settings in variants.items():
        em = OnlineEM(city, settings, past)
        record: dict[str, Any] = {"t": [], "corridor": [], "l1": [], "l1_all": [], "ll": []}
        lls: list[float] = []
        for t, arrivals in intervals(today.observations, args.batch_ms):
            if t > end:
                break
            em.step(t, arrivals)
            k, theta = parameter_arrays(em.state, em.priors)
            record["t"].append(t)
            record["corridor"].append(float((k * theta)[corridor].mean()))
            if t in evals:
                l1, l1_all, _, held = score(em.state, t)
                record["l1"].append(l1)
                record["l1_all"].append(l1_all)
                if held:
                    lls.extend([heldout_loglik(k, theta, held)] * len(held))
        record["ll"] = float(np.mean(lls)) if lls else float("nan")
        out[name] = record
    # Batch: every 30 minutes, EM from the priors over the 30 minutes before.
    record = {"t": [], "corridor": [], "l1": [], "l1_all": [], "ll": []}
    lls = []
    state: dict[int, Any] = {}
    for t in evals:
        if t % (30 * MIN) == 0:
            state = batch_em(today.observations, t, city, base, iterations=args.batch_iterations)
        k, theta = parameter_arrays(state, priors)
        l1, l1_all, corr, held = score(state, t)
        record["t"].append(t)
        record["corridor"].append(corr)
        record["l1"].append(l1)
        record["l1_all"].append(l1_all)
        if held:
            lls.extend([heldout_loglik(k, theta, held)] * len(held))
    record["ll"] = float(np.mean(lls)) if lls else float("nan")
    out["batch 30 min"] = record
    k0, t0 = parameter_arrays({}, priors)
    out["prior"] = {
        "l1": [l1_error(k0 * t0, city.truth_mean_s(t), observed) for t in evals],
        "ll": float(
            np.mean(
                [
                    heldout_loglik(k0, t0, held_by_minute.get(t, []))
                    for t in evals
                    if held_by_minute.get(t)
                ]
            )
        ),
    }
    out["setup"] = {
        **vars(args),
        "links": city.n_links,
        "observed_links": int(observed.sum()),
        "corridor_links": int(corridor.sum()),
        "today_observations": len(today.observations),
        "rush_onset_today": _hhmm(city.config.rush_onset_ms + city.day_variation(0)[0]),
        "cpu_s": round(time.process_time() - began, 1),
    }
    out["timeliness"] = timeliness(out, city, traffic, corridor)
    return out


def _series(
    city: City, truth: Any, corridor: np.ndarray, traffic: TrafficConfig, args: argparse.Namespace
) -> dict[str, list[float]]:
    ts = list(range(_tod(args.eval_from), traffic.end_ms + 1, args.batch_ms))
    return {"t": ts, "corridor": [float(truth(t)[corridor].mean()) for t in ts]}


def timeliness(
    out: dict[str, Any], city: City, traffic: TrafficConfig, corridor: np.ndarray
) -> dict[str, Any]:
    onset = city.config.rush_onset_ms + city.day_variation(0)[0]
    pre = float(city.truth_mean_s(onset - MIN)[corridor].mean())
    peak = float(city.truth_mean_s(onset + city.config.rush_ramp_ms + MIN)[corridor].mean())
    half = (pre + peak) / 2

    def first_above(ts: list[int], values: list[float]) -> int | None:
        return next((t for t, v in zip(ts, values, strict=True) if t >= onset and v >= half), None)

    truth_t = first_above(out["truth"]["t"], out["truth"]["corridor"])
    result: dict[str, Any] = {
        "onset": _hhmm(onset),
        "truth_half": _hhmm(truth_t or 0),
        "half_level_s": half,
    }
    for name in ("online + history", "online, no history", "batch 30 min"):
        t = first_above(out[name]["t"], out[name]["corridor"])
        result[name] = None if t is None or truth_t is None else (t - truth_t) / MIN
    return result


# ---- Spark runs ------------------------------------------------------------------------------
def spark_runs(argv: list[str]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "traffic_spark.py"), *argv],
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
        "--window-ms", str(args.window_s * 1000), "--batch-ms", str(args.batch_ms),
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
        "arrivals_per_s_at_5s": arrivals / (args.batch_ms / 1000) * (args.batch_ms / proc),
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
    lines = []
    acc = results.get("accuracy")
    if acc:
        s = acc["setup"]
        lines += [
            f"Accuracy ({s['links']} links, {s['observed_links']} observed; {s['days']} past days; "
            f"{s['batch_ms'] // 1000} s intervals; {s['samples']} samples):",
            "",
            "| | L1 error, observed links (s) | L1 error, all links (s) | held-out log-likelihood |",
            "| --- | --- | --- | --- |",
        ]
        for name in ("online + history", "online, no history", "batch 30 min"):
            r = acc[name]
            lines.append(
                f"| {name} | {np.mean(r['l1']):.2f} | {np.mean(r['l1_all']):.2f} | {r['ll']:.3f} |"
            )
        lines.append(
            f"| speed-limit prior only | {np.mean(acc['prior']['l1']):.2f} | | {acc['prior']['ll']:.3f} |"
        )
        tl = acc["timeliness"]
        lines += [
            "",
            f"Timeliness (rush hour today from {tl['onset']}; the truth's corridor mean is halfway at "
            f"{tl['truth_half']}): minutes after the truth until the estimate is halfway:",
            "",
            "| online + history | online, no history | batch 30 min |",
            "| --- | --- | --- |",
            "| "
            + " | ".join(
                _minutes(tl[n]) for n in ("online + history", "online, no history", "batch 30 min")
            )
            + " |",
        ]
    for row in results.get("scaling", []):
        if row is results["scaling"][0]:
            lines += [
                "",
                "| executors | samples | processing (ms) | E-steps/s | arrivals/s at 5 s |",
                "| --- | --- | --- | --- | --- |",
            ]
        lines.append(
            f"| {row['executors']} | {row['samples']} | {row['processing_ms']:.0f} | "
            f"{row['estep_obs_per_s']:.0f} | {row['arrivals_per_s_at_5s']:.1f} |"
        )
    rec = results.get("recovery")
    if rec:
        lines += [
            "",
            f"Recovery: executor {rec['killed']} killed in interval {rec['kill_at']}; estimates equal to the run without failure: {rec['equal']} ({rec['intervals']} intervals)",
        ]
    return "\n".join(lines)


def _minutes(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f}"


def plot(acc: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    for name, style in (
        ("truth", "k-"),
        ("online + history", "C0-"),
        ("online, no history", "C1-"),
        ("batch 30 min", "C2-"),
    ):
        r = acc[name]
        ax.plot(
            [t / 3_600_000 for t in r["t"]],
            r["corridor"],
            style,
            label=name,
            drawstyle="steps-post" if "batch" in name else "default",
        )
    ax.set_xlabel("time of day (h)")
    ax.set_ylabel("mean travel time, corridor links (s)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


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
    p.add_argument("--batch-ms", type=int, default=5000)
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
    p.add_argument("--samples-list", type=int, nargs="+", default=[100, 300])
    p.add_argument("--intervals", type=int, default=12)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--partitions", type=int, default=8)
    p.add_argument("--kill-at", type=int, default=6)
    p.add_argument("--out", default=str(RESULTS / "traffic.json"))
    args = p.parse_args(argv)
    if args.smoke:
        args = p.parse_args([
            "accuracy", "scaling", "recovery", "--size", "6", "--trips-per-min", "60",
            "--days", "2", "--start", "07:20", "--eval-from", "07:25", "--end", "07:50",
            "--batch-ms", "30000", "--window-s", "120", "--samples", "20", "--chains", "10",
            "--iterations", "1", "--batch-iterations", "3", "--size-spark", "5",
            "--trips-per-min-spark", "30", "--executors", "2", "--samples-list", "20",
            "--intervals", "3", "--warmup", "1", "--partitions", "4", "--kill-at", "2",
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
