"""Path inference from noisy GPS fixes: candidate paths, their weights in the E-step, and
per-link timing. Pure Python, no Spark."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

import tests.unit.traffic_support  # noqa: F401  (apps/ on the path)

from traffic.em import EMSettings, OnlineEM, Priors  # isort: skip
from traffic.estep import MIN_PATH_WEIGHT, SamplerSettings, link_statistics, path_weights  # isort: skip
from traffic.generate import TrafficConfig, simulate_day  # isort: skip
from traffic.network import City, CityConfig  # isort: skip
from traffic.observations import CandidatePath, Observation  # isort: skip
from traffic.paths import GpsModel, candidate_paths, link_point, projections  # isort: skip

H = 3_600_000
MIN = 60_000
FAST = SamplerSettings(samples=40, chains=10, burn_in=3)
PARAMS = {link: (2.0 + link / 10, 3.0 + link / 3) for link in range(1, 11)}


@pytest.fixture(scope="module")
def city() -> City:
    return City.build(CityConfig(size=6))


# ---- the text format ------------------------------------------------------------------------
def test_candidate_paths_round_trip_through_the_text_format() -> None:
    paths = (
        CandidatePath((4, 9, 12), 0.125, 0.5, 0.0),
        CandidatePath((4, 9), 0.25, 1.0, -1.75),
        CandidatePath((7,), 0.1, 0.3, -6.5),
    )
    obs = Observation("d0v3o2", 0, 27_000_123, 61.25, paths)
    line = obs.format()
    assert len(line.split("|")) == 8
    assert Observation.parse(line) == obs
    # One path with log prior 0 keeps the 7-field map-matched line.
    single = Observation.matched("x", 1, 5, 3.5, (1, 2), 0.5, 0.25)
    assert len(single.format().split("|")) == 7
    assert Observation.parse(single.format()) == single
    one_with_prior = Observation("y", 0, 5, 3.5, (CandidatePath((1,), 0.0, 1.0, -2.0),))
    assert Observation.parse(one_with_prior.format()) == one_with_prior
    with pytest.raises(ValueError, match=r"path fields list \[2, 2, 1, 2\] paths"):
        Observation.parse("z|0|5|3.5|1;2|0.5;0.5|0.5|0.0;-1.0")
    with pytest.raises(ValueError, match=r"has no path"):
        Observation("w", 0, 5, 3.5, ())
    with pytest.raises(ValueError, match=r"log prior -inf of path \(1,\) must be finite"):
        Observation("v", 0, 5, 3.5, (CandidatePath((1,), 0.0, 1.0, -math.inf),))
    assert obs.links_used(min_share=0.01) == [4, 7, 9, 12]


# ---- candidates -----------------------------------------------------------------------------
def test_a_fix_on_a_street_projects_onto_both_of_its_directions(city: City) -> None:
    link = 7
    x, y = link_point(city, link, 0.4)
    near = {p.link: p for p in projections(city, x + 3.0, y + 3.0, 10.0)}
    twin = next(
        other
        for other in range(city.n_links)
        if city.link_from[other] == city.link_to[link]
        and city.link_to[other] == city.link_from[link]
    )
    assert set(near) == {link, twin}
    assert near[link].position == pytest.approx(0.4, abs=3.1 / city.length_m[link])
    assert near[twin].position == pytest.approx(1 - near[link].position)
    assert near[link].distance_m == pytest.approx(3.0)


def test_exact_fixes_make_the_true_path_the_most_likely_candidate(city: City) -> None:
    traffic = TrafficConfig(start_ms=7 * H, end_ms=7 * H + 10 * MIN, trips_per_min=40)
    gps = GpsModel(sigma_m=10.0, radius_m=30.0)
    checked = 0
    for obs in simulate_day(city, traffic, 0).observations[:60]:
        (true,) = obs.paths
        if not (0.05 < true.start_pos < 0.95 and 0.05 < true.end_pos < 0.95):
            continue  # a fix at an intersection is on two links
        first = link_point(city, true.links[0], true.start_pos)
        second = link_point(city, true.links[-1], true.end_pos)
        found = candidate_paths(city, first, second, gps)
        assert found[0].log_prior == 0.0
        assert [p.log_prior for p in found] == sorted((p.log_prior for p in found), reverse=True)
        assert all(p.log_prior >= gps.min_log_prior for p in found)
        # The fastest route of the trip's origin and the candidates' searches may break a
        # tie between equally fast routes differently: then both are candidates.
        assert true.links in [p.links for p in found]
        best = found[0]
        assert best.links == true.links or math.isclose(
            sum(city.free_flow_s()[list(best.links)]), sum(city.free_flow_s()[list(true.links)])
        )
        checked += 1
    assert checked >= 20


def test_noisy_fixes_keep_the_trips_and_carry_their_candidates(city: City) -> None:
    exact_cfg = TrafficConfig(start_ms=7 * H, end_ms=7 * H + 15 * MIN, trips_per_min=40)
    noisy_cfg = replace(exact_cfg, gps_noise_m=10.0)
    exact = {o.id: o for o in simulate_day(city, exact_cfg, 0).observations}
    noisy = simulate_day(city, noisy_cfg, 0)
    assert noisy == simulate_day(city, noisy_cfg, 0)  # deterministic
    assert len(noisy.observations) >= 0.97 * len(exact)  # a fix far from every road: dropped
    true_among = 0
    for obs in noisy.observations:
        same = exact[obs.id]
        assert (obs.day, obs.t_end_ms, obs.duration_s) == (same.day, same.t_end_ms, same.duration_s)
        assert obs.paths and obs.paths[0].log_prior == 0.0
        true_among += same.paths[0].links in [p.links for p in obs.paths]
    assert true_among >= 0.85 * len(noisy.observations)
    with pytest.raises(ValueError, match=r"gps_noise_m -1.0 must be 0"):
        TrafficConfig(gps_noise_m=-1.0)


# ---- the E-step -----------------------------------------------------------------------------
def two_ways(duration: float) -> Observation:
    """A short path (one link) and a long one (four links), equally likely a priori."""
    return Observation(
        "o",
        0,
        1000,
        duration,
        (CandidatePath((1,), 0.0, 1.0), CandidatePath((2, 3, 4, 5), 0.0, 1.0)),
    )


def test_the_duration_picks_the_path_it_fits() -> None:
    short_mean = PARAMS[1][0] * PARAMS[1][1]
    long_mean = sum(PARAMS[link][0] * PARAMS[link][1] for link in (2, 3, 4, 5))
    weights = dict(path_weights(two_ways(short_mean), PARAMS, FAST))
    assert weights[0] > 0.95 and sum(weights.values()) == pytest.approx(1)
    weights = dict(path_weights(two_ways(long_mean), PARAMS, FAST))
    assert weights[1] > 0.95
    # A path far less likely than MIN_PATH_WEIGHT is dropped, not split over.
    unlikely = replace(two_ways(long_mean), paths=(
        CandidatePath((1,), 0.0, 1.0, -30.0), CandidatePath((2, 3, 4, 5), 0.0, 1.0)
    ))  # fmt: skip
    assert path_weights(unlikely, PARAMS, FAST) == [(1, 1.0)]
    # The prior counts: the same duration, the short path 1e4 times likelier a priori.
    middle = (short_mean + long_mean) / 2
    tilted = replace(two_ways(middle), paths=(
        CandidatePath((1,), 0.0, 1.0, math.log(1e4)), CandidatePath((2, 3, 4, 5), 0.0, 1.0)
    ))  # fmt: skip
    assert (
        dict(path_weights(tilted, PARAMS, FAST))[0]
        > dict(path_weights(two_ways(middle), PARAMS, FAST))[0]
    )
    assert path_weights(Observation.matched("m", 0, 0, 9.0, (3, 4), 0.2, 0.7), PARAMS, FAST) == [
        (0, 1.0)
    ]
    assert MIN_PATH_WEIGHT <= 0.01


def test_an_observation_contributes_each_candidate_as_a_weighted_observation() -> None:
    obs = two_ways(18.0)
    weights = dict(path_weights(obs, PARAMS, FAST))
    assert len(weights) == 2 and min(weights.values()) > 0.4  # both kept, both likely
    got = link_statistics([(obs, 0.5)], PARAMS, 7000, 1, FAST)
    expected = []
    per_chain = FAST.samples // FAST.chains
    for c, path in enumerate(obs.paths):
        alone = Observation(f"{obs.id}#{c}", 0, 1000, 18.0, (replace(path, log_prior=0.0),))
        # Each candidate gets chains in proportion to its weight.
        chains = math.ceil(FAST.chains * weights[c])
        assert chains < FAST.chains
        own = replace(FAST, chains=chains, samples=chains * per_chain)
        expected += link_statistics([(alone, 0.5 * weights[c])], PARAMS, 7000, 1, own)
    assert got == expected
    assert link_statistics([(obs, 0.5)], PARAMS, 7000, 1, FAST) == got  # deterministic


def test_per_link_timing_weighs_each_link_by_the_age_of_its_traversal() -> None:
    obs = Observation.matched("t", 0, 1000, 120.0, (1, 2, 3, 4), 0.5, 0.5)
    plain = link_statistics([(obs, 0.8)], PARAMS, 7000, 0, FAST)
    timed = link_statistics([(obs, 0.8)], PARAMS, 7000, 0, FAST, link_half_life_ms=60_000)
    assert [link for link, _ in timed] == [link for link, _ in plain] == [1, 2, 3, 4]
    weights = [stats[0] for _, stats in timed]
    assert weights == sorted(weights)  # the earlier a link was crossed, the less it weighs
    w = plain[0][1][0]  # the observation's weight, on every link without the timing
    # Relative to the trip's middle (60 s before its second fix): the first link, crossed
    # 60-120 s before, weighs less, the last one, crossed within the last 60 s, more.
    assert w * 0.5 < weights[0] < w < weights[-1] < w * 2
    for (_, p), (_, t) in zip(plain, timed, strict=True):  # the same samples, reweighted
        assert t[1] / t[0] == pytest.approx(p[1] / p[0], rel=1e-9)
        assert t[2] / t[0] == pytest.approx(p[2] / p[0], rel=1e-9)


def test_online_em_runs_over_candidate_paths(city: City) -> None:
    traffic = TrafficConfig(
        start_ms=7 * H, end_ms=7 * H + 6 * MIN, trips_per_min=40, gps_noise_m=12.0
    )
    day = simulate_day(city, traffic, 0)
    settings = EMSettings(sampler=FAST, iterations=1, history_days=0, link_timing=True)
    em = OnlineEM(city, settings)
    for t in range(7 * H + 5000, 7 * H + 6 * MIN + 1, 30_000):
        em.step(t, [o for o in day.observations if t - 30_000 < o.t_end_ms <= t])
    assert len(em.state) > 20
    means = em.means()
    prior = Priors(city, settings)
    assert np.all(np.isfinite(means)) and np.all(means > 0)
    assert any(em.state[link] != prior[link] for link in em.state)
