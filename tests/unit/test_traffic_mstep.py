"""The M-step against samples of a known Gamma, and its special functions."""

from __future__ import annotations

import math

import numpy as np
import pytest

import tests.unit.traffic_support  # noqa: F401  (apps/ on the path)

from traffic.estep import FIXED_POINT  # isort: skip
from traffic.mstep import (  # isort: skip
    digamma,
    fit_gamma,
    fit_samples,
    gamma_logpdf,
    solve_shape,
    trigamma,
)

EULER = 0.5772156649015329


def test_digamma_and_trigamma_match_known_values() -> None:
    assert digamma(1.0) == pytest.approx(-EULER, abs=1e-13)
    assert digamma(0.5) == pytest.approx(-EULER - 2 * math.log(2), abs=1e-13)
    assert trigamma(1.0) == pytest.approx(math.pi**2 / 6, abs=1e-13)
    assert trigamma(0.5) == pytest.approx(math.pi**2 / 2, abs=1e-13)
    for x in (0.01, 0.7, 3.3, 12.0, 250.0):
        assert digamma(x + 1) == pytest.approx(digamma(x) + 1 / x, rel=1e-13, abs=1e-13)
        assert trigamma(x) == pytest.approx(trigamma(x + 1) + 1 / x**2, rel=1e-12)
    with pytest.raises(ValueError, match="x > 0"):
        digamma(0.0)


@pytest.mark.parametrize("s", [1e-4, 0.01, 0.1, 0.5, 1.0, 5.0, 20.0])
def test_newton_solves_the_shape_equation(s: float) -> None:
    k = solve_shape(s)
    assert math.log(k) - digamma(k) == pytest.approx(s, rel=1e-12, abs=1e-14)


@pytest.mark.parametrize(("k", "theta"), [(3.0, 4.0), (1.5, 10.0), (8.0, 0.5)])
def test_the_fit_recovers_a_known_gamma(k: float, theta: float) -> None:
    n = 50_000
    x = np.random.default_rng(11).gamma(k, theta, n)
    k_hat, theta_hat = fit_samples(x)
    # Standard error of the shape's MLE: 1 / sqrt(n (trigamma(k) - 1/k)).
    se = 1 / math.sqrt(n * (trigamma(k) - 1 / k))
    assert abs(k_hat - k) < 5 * se
    assert k_hat * theta_hat == pytest.approx(x.mean(), rel=1e-9)  # the mean is matched
    # ...and it is the maximum of the likelihood: nearby shapes (same mean) do worse.
    best = gamma_logpdf(x, k_hat, theta_hat).sum()
    for dk in (-0.01, 0.01):
        kk = k_hat * (1 + dk)
        assert gamma_logpdf(x, kk, x.mean() / kk).sum() < best


def test_weights_count_like_repeated_samples() -> None:
    rng = np.random.default_rng(2)
    x = rng.gamma(2.5, 3.0, 500)
    w = rng.integers(1, 4, 500).astype(float)
    weighted = fit_samples(x, w)
    repeated = fit_samples(np.repeat(x, w.astype(int)))
    assert weighted == pytest.approx(repeated, rel=1e-9)


def test_the_prior_holds_a_link_without_data_and_yields_to_many_samples() -> None:
    prior = (3.0, 5.0)  # mean 15 s
    assert fit_gamma((0, 0, 0), prior, 3.0) == pytest.approx(prior, rel=1e-12)
    rng = np.random.default_rng(4)
    few = rng.gamma(4.0, 10.0, 3)  # mean ~40 s
    many = rng.gamma(4.0, 10.0, 20_000)
    k_few, t_few = fit_samples(few, prior=prior, strength=3.0)
    k_many, t_many = fit_samples(many, prior=prior, strength=3.0)
    # Three pseudo-observations against three samples: the mean is halfway.
    assert k_few * t_few == pytest.approx((few.sum() + 3 * 15.0) / 6, rel=1e-9)
    assert k_many * t_many == pytest.approx(40.0, rel=0.02)
    assert k_many == pytest.approx(4.0, rel=0.05)


def test_shape_bounds_keep_the_mean() -> None:
    x = np.random.default_rng(8).gamma(0.5, 4.0, 5000)  # k < 1: no peak above 0
    k, theta = fit_samples(x, min_shape=1.0)
    assert k == 1.0
    assert k * theta == pytest.approx(x.mean(), rel=1e-9)
    stats = (FIXED_POINT, 10 * FIXED_POINT, round(math.log(10) * FIXED_POINT))  # no spread
    assert fit_gamma(stats, (2.0, 1.0), 0.0, max_shape=500.0) == pytest.approx((500.0, 10 / 500))
