"""Accuracy and timeliness of the traffic estimator, in plain Python (the estimator the
Spark program runs, without Spark): see ``bench/paper/traffic.py``."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "apps"))

from traffic.em import EMSettings, OnlineEM, Params, Priors, batch_em
from traffic.estep import SamplerSettings
from traffic.generate import TrafficConfig, Traversal, intervals, simulate_day
from traffic.metrics import heldout_loglik, l1_error, parameter_arrays
from traffic.network import City, CityConfig
from traffic.observations import Observation

MIN = 60_000
VARIANTS = ("online + history", "online, no history", "batch 30 min")


def tod(text: str) -> int:
    h, m = text.split(":")
    return (int(h) * 60 + int(m)) * MIN


def hhmm(ms: float) -> str:
    s = int(ms // 1000)
    return f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"


@dataclass
class Scorer:
    """Scores estimates at a time of day against the city's ground truth."""

    city: City
    priors: Priors
    observed: np.ndarray  # links with at least 5 observations today in the evaluation
    corridor: np.ndarray  # corridor links among them
    held: dict[int, list[Traversal]]  # held-out traversals by the minute they started in

    def corridor_mean(self, state: dict[int, Params]) -> float:
        k, theta = parameter_arrays(state, self.priors)
        return float((k * theta)[self.corridor].mean())


@dataclass
class Record:
    t: list[int] = field(default_factory=list)  # corridor series (every update)
    corridor: list[float] = field(default_factory=list)
    l1: list[float] = field(default_factory=list)  # every minute of the evaluation
    l1_all: list[float] = field(default_factory=list)
    ll_sum: float = 0.0
    ll_count: int = 0

    def score(self, s: Scorer, state: dict[int, Params], t: int) -> None:
        k, theta = parameter_arrays(state, s.priors)
        mean = k * theta
        truth = s.city.truth_mean_s(t)
        self.l1.append(l1_error(mean, truth, s.observed))
        self.l1_all.append(l1_error(mean, truth))
        held = s.held.get(t, [])
        if held:
            self.ll_sum += heldout_loglik(k, theta, held) * len(held)
            self.ll_count += len(held)

    def summary(self) -> dict[str, Any]:
        return {
            "t": self.t,
            "corridor": self.corridor,
            "l1": self.l1,
            "l1_all": self.l1_all,
            "ll": self.ll_sum / self.ll_count if self.ll_count else float("nan"),
        }


@dataclass
class Setup:
    """A city, one simulated morning (today and the past days) and how to score it."""

    city: City
    today: list[Observation]
    past: list[Observation]
    scorer: Scorer
    settings: EMSettings
    evals: set[int]
    end: int
    observed_count: int


def setup(args: argparse.Namespace, gps_noise_m: float = 0.0) -> Setup:
    """The morning ``args`` describe. Links are "observed" by the exact (noiseless) data of
    the same trips, so runs with and without GPS noise are scored on the same links."""
    city = City.build(CityConfig(size=args.size))
    traffic = TrafficConfig(
        start_ms=tod(args.start), end_ms=tod(args.end), trips_per_min=args.trips_per_min
    )
    exact_today = simulate_day(city, traffic, 0)
    noisy = replace(traffic, gps_noise_m=gps_noise_m)
    today = exact_today if gps_noise_m == 0 else simulate_day(city, noisy, 0)
    past = [o for d in range(1, args.days + 1) for o in simulate_day(city, noisy, d).observations]
    eval_from, end = tod(args.eval_from), traffic.end_ms
    seen = np.zeros(city.n_links)
    for o in exact_today.observations:
        if eval_from < o.t_end_ms <= end:
            for link in o.links_used():
                seen[link] += 1
    settings = EMSettings(
        sampler=SamplerSettings(samples=args.samples, chains=args.chains, burn_in=args.burn_in),
        iterations=args.iterations,
        window_ms=args.window_s * 1000,
        half_life_ms=args.window_s * 500,
        history_days=args.days,
        history_weight=args.history_weight,
        prior_strength=args.prior_strength,
    )
    held: dict[int, list[Traversal]] = {}
    for h in exact_today.held_out:
        held.setdefault(-(-h.enter_ms // MIN) * MIN, []).append(h)
    observed = seen >= 5
    scorer = Scorer(city, Priors(city, settings), observed, city.corridor & observed, held)
    evals = set(range(eval_from, end + 1, MIN))
    return Setup(city, today.observations, past, scorer, settings, evals, end, int(observed.sum()))


def run_online(s: Setup, settings: EMSettings, batch_ms: int, past: bool = True) -> Record:
    """Online EM over today's stream, scored every minute of the evaluation."""
    em, record = OnlineEM(s.city, settings, s.past if past else ()), Record()
    for t, arrivals in intervals(s.today, batch_ms):
        if t > s.end:
            break
        em.step(t, arrivals)
        record.t.append(t)
        record.corridor.append(s.scorer.corridor_mean(em.state))
        if t in s.evals:
            record.score(s.scorer, em.state, t)
    return record


def truth_series(s: Setup, batch_ms: int) -> dict[str, Any]:
    truth_t = list(range(min(s.evals), s.end + 1, batch_ms))
    corridor = s.scorer.corridor
    return {
        "t": truth_t,
        "corridor": [float(s.city.truth_mean_s(t)[corridor].mean()) for t in truth_t],
    }


def accuracy(args: argparse.Namespace) -> dict[str, Any]:
    began = time.process_time()
    s = setup(args)
    city, scorer, settings, evals = s.city, s.scorer, s.settings, s.evals
    out: dict[str, Any] = {}
    online = {VARIANTS[0]: settings, VARIANTS[1]: replace(settings, history_days=0)}
    for name, variant in online.items():
        out[name] = run_online(s, variant, args.batch_ms, past=variant.history_days > 0).summary()
    # The batch baseline: at every half hour, EM from the priors over the half hour before.
    record, state = Record(), {}
    for t in sorted(evals):
        if t % (30 * MIN) == 0:
            state = batch_em(s.today, t, city, settings, iterations=args.batch_iterations)
        record.t.append(t)
        record.corridor.append(scorer.corridor_mean(state))
        record.score(scorer, state, t)
    out[VARIANTS[2]] = record.summary()
    prior = Record()
    for t in sorted(evals):
        prior.score(scorer, {}, t)
    out["prior"] = prior.summary()
    out["truth"] = truth_series(s, args.batch_ms)
    out["setup"] = {
        **vars(args),
        "links": city.n_links,
        "observed_links": s.observed_count,
        "corridor_links": int(scorer.corridor.sum()),
        "today_observations": len(s.today),
        "cpu_s": round(time.process_time() - began, 1),
    }
    out["timeliness"] = timeliness(out, city, scorer.corridor)
    return out


def timeliness(
    out: dict[str, Any], city: City, corridor: np.ndarray, names: tuple[str, ...] = VARIANTS
) -> dict[str, Any]:
    """Minutes from when the truth's corridor mean is halfway between its pre-rush and its
    rush-hour level to when each estimate's is."""
    onset = city.config.rush_onset_ms + city.day_variation(0)[0]
    pre = float(city.truth_mean_s(onset - MIN)[corridor].mean())
    peak = float(city.truth_mean_s(onset + city.config.rush_ramp_ms + MIN)[corridor].mean())
    half = (pre + peak) / 2

    def first_above(series: dict[str, Any]) -> int | None:
        pairs = zip(series["t"], series["corridor"], strict=True)
        return next((t for t, v in pairs if t >= onset and v >= half), None)

    truth_t = first_above(out["truth"])
    result: dict[str, Any] = {"onset": hhmm(onset), "truth_half": hhmm(truth_t or 0)}
    for name in names:
        t = first_above(out[name])
        result[name] = None if t is None or truth_t is None else (t - truth_t) / MIN
    return result


def plot(acc: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    for name, color in zip(("truth", *VARIANTS), ("k", "C0", "C1", "C2"), strict=True):
        r = acc[name]
        hours = [t / 3_600_000 for t in r["t"]]
        step = "steps-post" if name.startswith("batch") else "default"
        ax.plot(hours, r["corridor"], color=color, label=name, drawstyle=step)
    ax.set_xlabel("time of day (h)")
    ax.set_ylabel("mean travel time of corridor links (s)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
