"""The E-step sampler against numerical integration of the exact conditionals.

Each test draws many samples at fixed seeds and compares their distribution with the
conditional density integrated numerically (Kolmogorov-Smirnov distance, with the bound a
correct sampler exceeds with probability 1e-6). The same test is run on the tempting wrong
samplers (a Dirichlet split, and normalising independent gammas), which must fail it."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.traffic_support import cdf_on_grid, gamma_density, ks_critical, ks_distance

from traffic.estep import (  # isort: skip
    SamplerSettings,
    Split,
    link_statistics,
    rng_for,
    sample_splits,
)
from traffic.observations import Observation  # isort: skip
from traffic.pair_sampler import sample_tilted_beta  # isort: skip

N = 20_000


def tilted_beta_cdf(p: float, q: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    grid = np.linspace(0.0, 1.0, 1_000_001)
    with np.errstate(divide="ignore", invalid="ignore"):
        log = (
            np.where(p > 1, (p - 1) * np.log(grid), 0.0)
            + np.where(q > 1, (q - 1) * np.log1p(-grid), 0.0)
            - lam * grid
        )
    return grid, cdf_on_grid(log, grid)


@pytest.mark.parametrize(
    ("p", "q", "lam"),
    [
        (2.0, 3.0, 5.0),
        (3.0, 2.0, 0.0),
        (1.5, 4.0, 40.0),
        (3.0, 2.0, 400.0),
        (1.0, 1.0, 0.0),  # uniform
        (1.0, 1.0, 30.0),  # a truncated exponential
        (1.0, 3.0, 2.0),
        (3.0, 1.0, 0.0),
        (8.0, 2.0, 0.5),
        (1.0, 2.0, 2000.0),
    ],
)
def test_the_pair_sampler_draws_the_two_gamma_conditional(p: float, q: float, lam: float) -> None:
    rng = np.random.default_rng(17)
    z = sample_tilted_beta(
        np.full(N, p), np.full(N, q), np.full(N, lam), lambda idx, n: rng.random((len(idx), n))
    )
    grid, cdf = tilted_beta_cdf(p, q, lam)
    assert ks_distance(z, grid, cdf) < ks_critical(N)


def test_the_pair_sampler_refuses_a_density_it_cannot_bound() -> None:
    with pytest.raises(ValueError, match=r"shapes p, q >= 1 and lam >= 0"):
        sample_tilted_beta(np.array([0.5]), np.array([2.0]), np.array([1.0]), lambda i, n: None)  # type: ignore[arg-type, return-value]


# ---- two links: the split is one pair update, exact -------------------------------------------
SHAPES2 = np.array([2.0, 3.0])
SCALES2 = np.array([1.0, 6.0])  # very different scales: where a Dirichlet split goes wrong
TOTAL2 = 20.0


def two_link_reference() -> tuple[np.ndarray, np.ndarray]:
    # u = y1 / d has density ∝ u^(k1-1) (1-u)^(k2-1) exp(d (1/b2 - 1/b1) u)
    g = TOTAL2 * (1 / SCALES2[1] - 1 / SCALES2[0])
    return tilted_beta_cdf(SHAPES2[0], SHAPES2[1], -g)


def test_the_split_of_two_links_follows_the_exact_conditional() -> None:
    prob = Split(SHAPES2, SCALES2, TOTAL2, np.random.default_rng(3))
    (y,) = sample_splits([prob], chains=N, burn_in=1, per_chain=1)
    assert y.shape == (N, 2)
    assert np.allclose(y.sum(axis=1), TOTAL2)
    grid, cdf = two_link_reference()
    assert ks_distance(y[:, 0] / TOTAL2, grid, cdf) < ks_critical(N)


def test_a_dirichlet_split_fails_the_same_test() -> None:
    rng = np.random.default_rng(3)
    shares = rng.dirichlet(SHAPES2, N)  # what one gets by ignoring the scales
    grid, cdf = two_link_reference()
    assert ks_distance(shares[:, 0], grid, cdf) > 2 * ks_critical(N)


def test_normalising_independent_gammas_fails_the_same_test() -> None:
    # The "Gamma-Dirichlet" shortcut: draw y_i ~ Gamma(k_i, b_i) and rescale to the total.
    rng = np.random.default_rng(3)
    y = rng.gamma(SHAPES2, SCALES2, size=(N, 2))
    grid, cdf = two_link_reference()
    assert ks_distance(y[:, 0] / y.sum(axis=1), grid, cdf) > 2 * ks_critical(N)


# ---- three links: Gibbs; the marginal of the first link against a numerical convolution -------
SHAPES3 = np.array([2.0, 3.0, 2.5])
SCALES3 = np.array([1.0, 8.0, 3.0])
TOTAL3 = 30.0


def three_link_marginal() -> tuple[np.ndarray, np.ndarray]:
    """CDF of y1 given y1 + y2 + y3 = d: f1(y1) * (f2 conv f3)(d - y1), integrated."""
    grid = np.linspace(0.0, TOTAL3, 20_001)
    dx = grid[1] - grid[0]
    f = [gamma_density(grid, k, s) for k, s in zip(SHAPES3, SCALES3, strict=True)]
    conv = np.convolve(f[1], f[2])[: len(grid)] * dx  # (f2 * f3)(z) on the same grid
    density = f[0] * conv[::-1]  # f1(y) (f2 * f3)(d - y)
    with np.errstate(divide="ignore"):
        return grid, cdf_on_grid(np.log(density), grid)


def test_gibbs_over_three_links_reaches_the_exact_marginal() -> None:
    burn_in = SamplerSettings().burn_in  # what the E-step runs
    prob = Split(SHAPES3, SCALES3, TOTAL3, np.random.default_rng(5))
    (y,) = sample_splits([prob], chains=N, burn_in=burn_in, per_chain=1)
    assert np.allclose(y.sum(axis=1), TOTAL3)
    grid, cdf = three_link_marginal()
    assert ks_distance(y[:, 0], grid, cdf) < ks_critical(N)
    # ...while a Dirichlet split of the total is far off.
    shares = np.random.default_rng(5).dirichlet(SHAPES3, N)
    assert ks_distance(shares[:, 0] * TOTAL3, grid, cdf) > 2 * ks_critical(N)


# ---- determinism ----------------------------------------------------------------------------
def observations() -> list[Observation]:
    return [
        Observation.matched("a", 0, 1000, 60.0, (1, 2, 3), 0.25, 0.5),
        Observation.matched("b", 0, 1000, 45.0, (4, 5), 0.5, 0.75),
        Observation.matched("c", 0, 1000, 30.0, (6,), 0.1, 0.9),
        Observation.matched("d", 2, 1000, 61.0, (7, 8, 9, 10), 0.3, 0.2),
    ]


PARAMS = {link: (2.0 + link / 10, 3.0 + link / 3) for link in range(1, 11)}
FAST = SamplerSettings(samples=40, chains=10, burn_in=3)


def test_an_observations_statistics_depend_on_it_and_its_seed_only() -> None:
    obs = observations()
    together = link_statistics([(o, 0.5) for o in obs], PARAMS, 7000, 1, FAST)
    alone = [s for o in obs for s in link_statistics([(o, 0.5)], PARAMS, 7000, 1, FAST)]
    reversed_ = link_statistics([(o, 0.5) for o in reversed(obs)], PARAMS, 7000, 1, FAST)
    assert sorted(together) == sorted(alone) == sorted(reversed_)
    again = link_statistics([(o, 0.5) for o in obs], PARAMS, 7000, 1, FAST)
    assert together == again
    other_iteration = link_statistics([(o, 0.5) for o in obs], PARAMS, 7000, 2, FAST)
    other_interval = link_statistics([(o, 0.5) for o in obs], PARAMS, 12000, 1, FAST)
    assert together not in (other_iteration, other_interval)


def test_a_single_link_observation_is_its_duration_over_its_share() -> None:
    ((link, (w, wx, wlog)),) = link_statistics([(observations()[2], 2.0)], PARAMS, 0, 0, FAST)
    x = 30.0 / 0.8
    assert link == 6
    assert w == round(2.0 * 2**40)
    assert wx == round(2.0 * x * 2**40)
    assert wlog == round(2.0 * np.log(x) * 2**40)


def test_samples_are_split_exactly_over_the_links() -> None:
    obs = observations()[3]
    terms = obs.paths[0].terms()
    shares = np.array([a for _, a in terms])
    prob = Split(
        np.array([PARAMS[link][0] for link, _ in terms]),
        np.array([PARAMS[link][1] for link, _ in terms]) * shares,
        obs.duration_s,
        rng_for(obs.id, 0, 0),
    )
    (y,) = sample_splits([prob], chains=10, burn_in=2, per_chain=3)
    assert y.shape == (30, 4)
    assert np.all(y > 0)
    assert np.allclose(y.sum(axis=1), obs.duration_s)


def test_the_sampler_settings_are_checked() -> None:
    with pytest.raises(ValueError, match=r"samples 100 must be a multiple of chains 30"):
        SamplerSettings(samples=100, chains=30)
    with pytest.raises(ValueError, match=r"shapes \[0.5, 2.0\] must be at least 1"):
        sample_splits([Split(np.array([0.5, 2.0]), np.ones(2), 1.0, rng_for("x", 0, 0))], 2, 1, 1)
