"""The synthetic city, the observation format and the generator: deterministic, and the
observations are what the model says they are."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import tests.unit.traffic_support  # noqa: F401  (apps/ on the path)

from traffic.generate import (  # isort: skip
    TrafficConfig,
    intervals,
    load_city,
    read_held_out,
    read_observations,
    simulate_day,
    write_dataset,
)
from traffic.network import City, CityConfig  # isort: skip
from traffic.observations import CandidatePath, Observation, interval_end  # isort: skip
import itertools

H = 3_600_000
MIN = 60_000


def test_the_default_city_has_a_few_thousand_links_and_rush_hour_corridors() -> None:
    city = City.build()
    n = city.config.size
    assert city.n_links == 4 * n * (n - 1) == 3024
    assert 0 < city.corridor.sum() < city.n_links // 10
    arterial = np.isclose(city.speed_limit_mps, 50 / 3.6)
    assert city.corridor[~arterial].sum() == 0  # corridors are arterials
    assert np.all((city.length_m >= 90) & (city.length_m <= 220))


def test_the_city_and_its_routes_are_deterministic_and_connected() -> None:
    a, b = City.build(CityConfig(size=6)), City.build(CityConfig(size=6))
    assert np.array_equal(a.length_m, b.length_m) and np.array_equal(a.corridor, b.corridor)
    route = a.route(0, 35)
    assert route == b.route(0, 35)
    assert int(a.link_from[route[0]]) == 0 and int(a.link_to[route[-1]]) == 35
    for first, second in itertools.pairwise(route):
        assert a.link_to[first] == a.link_from[second]
    with pytest.raises(ValueError, match="intersection 36 is not in this city"):
        a.route(0, 36)


def test_rush_hour_raises_corridor_travel_times_only_in_its_time() -> None:
    city = City.build(CityConfig(size=8))
    onset = city.config.rush_onset_ms + city.day_variation(0)[0]
    before = city.truth_mean_s(onset - MIN)
    peak = city.truth_mean_s(onset + city.config.rush_ramp_ms + MIN)
    after = city.truth_mean_s(onset + 2 * city.config.rush_ramp_ms + city.config.rush_hold_ms + MIN)
    c = city.corridor
    assert np.all(peak[c] / before[c] >= 1.8)  # at least doubled (A >= 1, strength >= 0.85)
    assert np.allclose(
        peak[~c] / before[~c], 1 + 0.1 * city.rush_profile(onset + city.config.rush_ramp_ms + MIN)
    )
    assert np.allclose(after, before)
    assert city.day_variation(1) != city.day_variation(2)  # every day a little different


def test_observation_text_round_trips_and_bad_lines_are_named() -> None:
    obs = Observation.matched("d1v7o3", 1, 27_000_123, 61.25, (4, 9, 12), 0.1234567890123, 0.5)
    assert Observation.parse(obs.format()) == obs
    with pytest.raises(ValueError, match=r"has 3 fields separated by '\|'; expected 7"):
        Observation.parse("a|b|c")
    with pytest.raises(ValueError, match=r"malformed"):
        Observation.parse("a|0|x|60|1|0.5|0.5")
    with pytest.raises(ValueError, match=r"ends \(0.2\) before it starts \(0.5\)"):
        Observation.matched("x", 0, 0, 60.0, (3,), 0.5, 0.2)


def test_shares_of_partial_links() -> None:
    multi = CandidatePath((1, 2, 3), 0.25, 0.5)
    assert multi.shares() == [0.75, 1.0, 0.5]
    assert multi.shares(2.0) == [1 - 0.25**2, 1.0, 0.25]
    single = CandidatePath((7,), 0.25, 0.75)
    assert single.shares() == [0.5]
    barely = CandidatePath((1, 2, 3), 0.995, 0.5)
    assert barely.terms(min_share=0.01) == [(2, 1.0), (3, 0.5)]


def test_intervals_are_half_open_and_include_empty_ones() -> None:
    assert interval_end(5000, 5000) == 5000
    assert interval_end(5001, 5000) == 10000
    obs = [Observation.matched(str(t), 0, t, 60.0, (1,), 0.0, 1.0) for t in (4000, 5000, 16000)]
    grouped = [(t, [o.id for o in batch]) for t, batch in intervals(obs, 5000)]
    assert grouped == [(5000, ["4000", "5000"]), (10000, []), (15000, []), (20000, ["16000"])]


def test_a_day_of_traffic_is_deterministic_and_consistent_with_the_route() -> None:
    city = City.build(CityConfig(size=6))
    traffic = TrafficConfig(start_ms=6 * H, end_ms=6 * H + 20 * MIN, trips_per_min=40)
    day = simulate_day(city, traffic, 0)
    assert day == simulate_day(city, traffic, 0)
    assert day.observations != simulate_day(city, traffic, 1).observations
    assert all(traffic.start_ms <= o.t_end_ms <= traffic.end_ms for o in day.observations)
    assert [o.t_end_ms for o in day.observations] == sorted(o.t_end_ms for o in day.observations)
    for o in day.observations:
        (path,) = o.paths  # exact fixes: one map-matched path
        for first, second in zip(path.links, path.links[1:], strict=False):
            assert city.link_to[first] == city.link_from[second]
    # Fixes are planned a report period of typical driving apart: durations average ~60 s.
    durations = np.array([o.duration_s for o in day.observations])
    assert 50 < durations.mean() < 75
    assert day.held_out and not any(
        o.id.split("v")[1].split("o")[0] == "0" for o in day.observations
    )


def test_clock_fixes_are_a_report_period_apart() -> None:
    city = City.build(CityConfig(size=6))
    traffic = TrafficConfig(
        start_ms=6 * H, end_ms=6 * H + 20 * MIN, trips_per_min=40, fixes="clock"
    )
    day = simulate_day(city, traffic, 0)
    assert np.allclose([o.duration_s for o in day.observations], 60.0, atol=2e-3)


def test_the_dataset_files_rebuild_the_same_data(tmp_path: Path) -> None:
    config = CityConfig(size=5)
    traffic = TrafficConfig(start_ms=6 * H, end_ms=6 * H + 10 * MIN, trips_per_min=30)
    write_dataset(str(tmp_path), config, traffic, days=2)
    city, loaded = load_city(str(tmp_path))
    assert loaded == traffic and city.config == config
    today = simulate_day(city, traffic, 0)
    assert read_observations(str(tmp_path / "today.txt")) == today.observations
    assert read_held_out(str(tmp_path / "heldout.txt")) == today.held_out
    assert sorted(os.listdir(tmp_path / "history")) == ["day-01.txt", "day-02.txt"]
    past = read_observations(str(tmp_path / "history" / "day-02.txt"))
    assert past == simulate_day(city, traffic, 2).observations
    with pytest.raises(FileNotFoundError, match="generate a dataset first"):
        load_city(str(tmp_path / "nowhere"))
