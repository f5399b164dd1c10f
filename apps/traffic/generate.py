"""Vehicles driving the synthetic city and the observations their GPS fixes make.

Trips start at random times (a Poisson process, ``trips_per_min``) between random pairs of
intersections and follow the fastest route at the speed limits. Entering a link at time
``t`` a vehicle spends a Gamma(k_l, theta_l(t, day)) time on it (the city's ground truth),
at a constant speed within the link. Each vehicle reports a fix every ``report_s`` seconds
from a random phase; two consecutive fixes make one observation. With exact fixes
(``gps_noise_m=0``, the default) it is already map-matched: the links between them and the
positions of the fixes on the first and last link. With ``gps_noise_m`` each fix is moved
by isotropic Gaussian noise of that standard deviation and the observation carries the
candidate paths between the two noisy fixes (:mod:`traffic.paths`), the true one among
them or not.

Every ``holdout_every``-th vehicle of today is held out: its observations are not in the
stream; its true full-link travel times are kept to score the estimates (the held-out
log-likelihood). Everything is a function of the seeds: the same configuration gives the
same observations, in the same order.

Files (``python -m traffic.generate --out DIR``, with ``apps/`` on the path)::

    DIR/city.json               the city and traffic configuration (rebuilds everything)
    DIR/today.txt               today's observations, by time of the second fix
    DIR/heldout.txt             held-out traversals: link|enter_ms|seconds
    DIR/history/day-NN.txt      the observations of NN days ago (all vehicles)
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field

import numpy as np

from traffic.network import City, CityConfig
from traffic.observations import CandidatePath, Observation, interval_end
from traffic.paths import GpsModel, candidate_paths, link_point

__all__ = [
    "DayData",
    "TrafficConfig",
    "Traversal",
    "intervals",
    "load_city",
    "read_held_out",
    "read_observations",
    "simulate_day",
    "write_dataset",
]


@dataclass(frozen=True)
class TrafficConfig:
    """When and how much the vehicles drive. Times of day in ms since midnight."""

    start_ms: int = 6 * 3_600_000 + 45 * 60_000
    end_ms: int = 9 * 3_600_000
    trips_per_min: float = 60.0
    report_s: float = 60.0
    warmup_ms: int = 20 * 60_000
    holdout_every: int = 10
    fixes: str = "planned"
    gps_noise_m: float = 0.0  # 0: fixes exactly on the road, map-matched to one path
    seed: int = 23

    def __post_init__(self) -> None:
        if self.end_ms <= self.start_ms:
            raise ValueError(
                f"traffic end {self.end_ms} ms must come after its start {self.start_ms} ms"
            )
        if self.fixes not in ("planned", "clock"):
            raise ValueError(f"fixes {self.fixes!r} must be 'planned' or 'clock'")
        if not self.gps_noise_m >= 0:
            raise ValueError(
                f"gps_noise_m {self.gps_noise_m} must be 0 (exact fixes) or a positive "
                "standard deviation in metres, e.g. 15"
            )
        if self.trips_per_min <= 0 or self.report_s <= 0:
            raise ValueError(
                f"trips_per_min {self.trips_per_min} and report_s {self.report_s} must be positive"
            )


@dataclass(frozen=True, slots=True)
class Traversal:
    """A held-out vehicle's full traversal of a link: the truth to score estimates with."""

    link: int
    enter_ms: int
    seconds: float


@dataclass
class DayData:
    day: int
    observations: list[Observation] = field(default_factory=list)
    held_out: list[Traversal] = field(default_factory=list)


def simulate_day(city: City, traffic: TrafficConfig, day: int) -> DayData:
    """Every observation of one day (0 = today) made between ``start_ms`` and ``end_ms``,
    ordered by the time of their second fix (then id)."""
    rng = np.random.default_rng([traffic.seed, 0, day, city.config.seed])
    span_ms = traffic.end_ms - traffic.start_ms + traffic.warmup_ms
    trips = int(rng.poisson(traffic.trips_per_min * span_ms / 60_000))
    starts = np.sort(rng.uniform(traffic.start_ms - traffic.warmup_ms, traffic.end_ms, trips))
    ends = rng.integers(0, city.n_nodes, size=(trips, 2))
    data = DayData(day)
    for vehicle in range(trips):
        origin, destination = int(ends[vehicle, 0]), int(ends[vehicle, 1])
        if origin == destination:
            continue
        held = day == 0 and vehicle % traffic.holdout_every == 0
        _drive(city, traffic, day, vehicle, origin, destination, float(starts[vehicle]), held, data)
    data.observations.sort(key=lambda o: (o.t_end_ms, o.id))
    return data


def _drive(
    city: City,
    traffic: TrafficConfig,
    day: int,
    vehicle: int,
    origin: int,
    destination: int,
    start_ms: float,
    held: bool,
    data: DayData,
) -> None:
    rng = np.random.default_rng([traffic.seed, 1, day, vehicle])
    route = city.route(origin, destination)
    enter: list[float] = []
    leave: list[float] = []
    t = start_ms
    for link in route:
        mean = city.link_mean_s(link, t, day)
        k = float(city.shape[link])
        seconds = float(rng.gamma(k, mean / k))
        enter.append(t)
        t += seconds * 1000
        leave.append(t)
        if held and traffic.start_ms <= enter[-1] and t <= traffic.end_ms:
            data.held_out.append(Traversal(link, round(enter[-1]), seconds))
    if held:
        return
    phase = float(rng.uniform(0, 1))
    if traffic.fixes == "clock":
        fixes = _clock_fixes(enter, leave, start_ms + phase * traffic.report_s * 1000, t, traffic)
    else:
        fixes = _planned_fixes(city, route, enter, leave, start_ms, phase, traffic, day)
    noisy = _noisy_points(city, route, fixes, traffic, day, vehicle)
    for m in range(1, len(fixes)):
        (t0, i0, p0), (t1, i1, p1) = fixes[m - 1], fixes[m]
        if not traffic.start_ms <= t1 <= traffic.end_ms:
            continue
        if noisy is None:
            paths: tuple[CandidatePath, ...] = (CandidatePath(tuple(route[i0 : i1 + 1]), p0, p1),)
        else:
            paths = tuple(candidate_paths(city, noisy[m - 1], noisy[m], _gps(traffic)))
            if not paths:
                continue  # a fix too far from every road: dropped, as map matching would
        data.observations.append(
            Observation(f"d{day}v{vehicle}o{m}", day, round(t1), (t1 - t0) / 1000, paths)
        )


def _gps(traffic: TrafficConfig) -> GpsModel:
    """The path inference's model of the generator's noise: candidates within 3 sigma."""
    return GpsModel(sigma_m=traffic.gps_noise_m, radius_m=3 * traffic.gps_noise_m)


def _noisy_points(
    city: City,
    route: list[int],
    fixes: list[tuple[float, int, float]],
    traffic: TrafficConfig,
    day: int,
    vehicle: int,
) -> list[tuple[float, float]] | None:
    """Where the GPS put each fix: the true point plus isotropic Gaussian noise (from a
    generator of its own, so the trips are the same whatever the noise); None without noise."""
    if traffic.gps_noise_m == 0:
        return None
    rng = np.random.default_rng([traffic.seed, 2, day, vehicle])
    noise = rng.normal(0.0, traffic.gps_noise_m, size=(len(fixes), 2))
    points = []
    for (_, i, position), (nx, ny) in zip(fixes, noise.tolist(), strict=True):
        x, y = link_point(city, route[i], position)
        points.append((x + nx, y + ny))
    return points


def _clock_fixes(
    enter: list[float], leave: list[float], first: float, arrival: float, traffic: TrafficConfig
) -> list[tuple[float, int, float]]:
    """Fixes every ``report_s`` of the clock: (time, route index, position on the link)."""
    fixes = []
    fix = first
    while fix < arrival:
        i = bisect.bisect_right(leave, fix)
        fixes.append((fix, i, (fix - enter[i]) / (leave[i] - enter[i])))
        fix += traffic.report_s * 1000
    return fixes


def _planned_fixes(
    city: City,
    route: list[int],
    enter: list[float],
    leave: list[float],
    start_ms: float,
    phase: float,
    traffic: TrafficConfig,
    day: int,
) -> list[tuple[float, int, float]]:
    """Fixes where the vehicle is expected every ``report_s`` (typical speeds at departure),
    and the times it actually gets there: (time, route index, position on the link)."""
    typical = [city.link_mean_s(link, start_ms, day) for link in route]
    fixes = []
    target = phase * traffic.report_s
    done = 0.0  # expected seconds to the start of link i
    for i, mean in enumerate(typical):
        while target < done + mean:
            position = (target - done) / mean
            fixes.append((enter[i] + position * (leave[i] - enter[i]), i, position))
            target += traffic.report_s
        done += mean
    return fixes


def intervals(
    observations: Iterable[Observation], batch_ms: int
) -> Iterator[tuple[int, list[Observation]]]:
    """Observations grouped into the stream's intervals ``(T - batch, T]`` by the time of
    their second fix: ``(T, observations)`` in time order, empty intervals included."""
    grouped: dict[int, list[Observation]] = {}
    for obs in observations:
        grouped.setdefault(interval_end(obs.t_end_ms, batch_ms), []).append(obs)
    if not grouped:
        return
    t, last = min(grouped), max(grouped)
    while t <= last:
        yield t, grouped.get(t, [])
        t += batch_ms


# ---- files ------------------------------------------------------------------------------------
def write_dataset(out: str, city_config: CityConfig, traffic: TrafficConfig, days: int) -> None:
    """Today (the stream), its held-out traversals and ``days`` past days (history)."""
    city = City.build(city_config)
    os.makedirs(os.path.join(out, "history"), exist_ok=True)
    with open(os.path.join(out, "city.json"), "w") as f:
        json.dump({"city": asdict(city_config), "traffic": asdict(traffic)}, f, indent=1)
    today = simulate_day(city, traffic, 0)
    _write_lines(os.path.join(out, "today.txt"), (o.format() for o in today.observations))
    _write_lines(
        os.path.join(out, "heldout.txt"),
        (f"{h.link}|{h.enter_ms}|{h.seconds!r}" for h in today.held_out),
    )
    for day in range(1, days + 1):
        past = simulate_day(city, traffic, day)
        _write_lines(
            os.path.join(out, "history", f"day-{day:02d}.txt"),
            (o.format() for o in past.observations),
        )


def _write_lines(path: str, lines: Iterable[str]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        for line in lines:
            f.write(line + "\n")
    os.replace(tmp, path)


def load_city(directory: str) -> tuple[City, TrafficConfig]:
    """The city and traffic configuration a dataset directory was generated with."""
    path = os.path.join(directory, "city.json")
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"{path} does not exist: generate a dataset first, e.g. "
            f"PYTHONPATH=apps python -m traffic.generate --out {directory}"
        )
    with open(path) as f:
        spec = json.load(f)
    return City.build(CityConfig(**spec["city"])), TrafficConfig(**spec["traffic"])


def read_observations(path: str) -> list[Observation]:
    with open(path) as f:
        return [Observation.parse(line) for line in f if line.strip()]


def read_held_out(path: str) -> list[Traversal]:
    with open(path) as f:
        rows = (line.strip().split("|") for line in f if line.strip())
        return [Traversal(int(a), int(b), float(c)) for a, b, c in rows]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--out", required=True, help="directory to write the dataset to")
    p.add_argument("--size", type=int, default=CityConfig.size, help="intersections per side")
    p.add_argument("--days", type=int, default=10, help="past days of history")
    p.add_argument("--trips-per-min", type=float, default=TrafficConfig.trips_per_min)
    p.add_argument("--start", default="06:45", help="time of day the data starts (HH:MM)")
    p.add_argument("--end", default="09:00", help="time of day the data ends (HH:MM)")
    p.add_argument(
        "--gps-noise-m",
        type=float,
        default=TrafficConfig.gps_noise_m,
        help="standard deviation of the GPS noise in m (0: exact, map-matched fixes); with "
        "noise every observation carries its candidate paths",
    )
    p.add_argument("--seed", type=int, default=TrafficConfig.seed)
    args = p.parse_args(argv)
    traffic = TrafficConfig(
        start_ms=_clock(args.start),
        end_ms=_clock(args.end),
        trips_per_min=args.trips_per_min,
        gps_noise_m=args.gps_noise_m,
        seed=args.seed,
    )
    write_dataset(args.out, CityConfig(size=args.size), traffic, args.days)
    print(f"wrote {args.out}", flush=True)
    return 0


def _clock(text: str) -> int:
    hours, sep, minutes = text.partition(":")
    if not sep or not hours.isdigit() or not minutes.isdigit():
        raise SystemExit(f"time of day {text!r} is not HH:MM, e.g. 07:30")
    return (int(hours) * 60 + int(minutes)) * 60_000


if __name__ == "__main__":
    sys.exit(main())
