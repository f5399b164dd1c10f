"""The M-step: per link, the weighted maximum-likelihood Gamma fit, pulled towards a prior.

The E-step's samples of a link's travel time ``x`` enter only through three sums: the
weight ``W``, ``sum w x`` and ``sum w log x``. The prior is a Gamma(k0, theta0) whose mean
comes from the link's speed limit, counted as ``strength`` pseudo-observations (its
sufficient statistics: mean ``k0 theta0``, mean log ``digamma(k0) + log theta0``), as the
Mobile Millennium code did (``GammaLearn.mle2``). With

    mean = (sum w x + strength k0 theta0) / (W + strength)
    s    = log(mean) - (sum w log x + strength (digamma(k0) + log theta0)) / (W + strength)

the maximum-likelihood shape solves ``log k - digamma(k) = s`` (Newton from Minka's
closed-form start, 2002) and ``theta = mean / k``. A link seen by few observations stays
near its prior; one seen by many follows its data. Shapes are kept in
``[min_shape, max_shape]`` (the mean is kept when a bound applies): a density highest at 0
(k < 1) is not a travel time.
"""

from __future__ import annotations

import math

import numpy as np

from traffic.estep import FIXED_POINT, Stats

__all__ = [
    "digamma",
    "fit_gamma",
    "fit_samples",
    "gamma_logpdf",
    "solve_shape",
    "trigamma",
]


def digamma(x: float) -> float:
    """psi(x) for x > 0 (recurrence up to 10, then the asymptotic series; error < 1e-14)."""
    if not x > 0:
        raise ValueError(f"digamma is defined here for x > 0, got {x}")
    acc = 0.0
    while x < 10:
        acc -= 1 / x
        x += 1
    f = 1 / (x * x)
    series = f * (1 / 12 - f * (1 / 120 - f * (1 / 252 - f * (1 / 240 - f / 132))))
    return acc + math.log(x) - 0.5 / x - series


def trigamma(x: float) -> float:
    """psi'(x) for x > 0 (recurrence up to 10, then the asymptotic series)."""
    if not x > 0:
        raise ValueError(f"trigamma is defined here for x > 0, got {x}")
    acc = 0.0
    while x < 10:
        acc += 1 / (x * x)
        x += 1
    f = 1 / (x * x)
    series = (1 / 6 - f * (1 / 30 - f * (1 / 42 - f * (1 / 30 - f * 5 / 66)))) / x
    return acc + 1 / x + f * (0.5 + series)


def gamma_logpdf(
    x: np.ndarray | float, k: np.ndarray | float, theta: np.ndarray | float
) -> np.ndarray:
    """log of the Gamma(k, theta) density at x (elementwise)."""
    x, k, theta = np.asarray(x, float), np.asarray(k, float), np.asarray(theta, float)
    lgam = np.vectorize(math.lgamma)(k)
    return (k - 1) * np.log(x) - x / theta - lgam - k * np.log(theta)


def solve_shape(s: float) -> float:
    """The k > 0 with log(k) - digamma(k) = s (s > 0)."""
    if not s > 0:
        raise ValueError(f"log(mean) - mean(log) = {s} must be positive to fit a Gamma shape")
    k = (3 - s + math.sqrt((s - 3) ** 2 + 24 * s)) / (12 * s)
    for _ in range(100):
        f = math.log(k) - digamma(k) - s
        step = f / (1 / k - trigamma(k))
        new = k - step
        if new <= 0:
            new = k / 2
        if abs(new - k) <= 1e-14 * k:
            return new
        k = new
    return k


def fit_gamma(
    stats: Stats,
    prior: tuple[float, float],
    strength: float,
    min_shape: float = 1.0,
    max_shape: float = 1000.0,
) -> tuple[float, float]:
    """``(shape, scale)`` of one link from its fixed-point statistics and its prior."""
    k0, theta0 = prior
    w = stats[0] / FIXED_POINT
    n = w + strength
    if n <= 0:
        return prior
    mean = (stats[1] / FIXED_POINT + strength * k0 * theta0) / n
    mean_log = (stats[2] / FIXED_POINT + strength * (digamma(k0) + math.log(theta0))) / n
    s = math.log(mean) - mean_log
    k = max_shape if s <= 0 else solve_shape(s)
    k = min(max(k, min_shape), max_shape)
    return k, mean / k


def fit_samples(
    x: np.ndarray,
    weights: np.ndarray | None = None,
    prior: tuple[float, float] = (1.0, 1.0),
    strength: float = 0.0,
    min_shape: float = 1e-6,
    max_shape: float = 1e6,
) -> tuple[float, float]:
    """The same fit from raw samples (tests, and the batch comparison)."""
    x = np.asarray(x, float)
    w = np.ones_like(x) if weights is None else np.asarray(weights, float)
    stats = (
        round(float(w.sum()) * FIXED_POINT),
        round(float((w * x).sum()) * FIXED_POINT),
        round(float((w * np.log(x)).sum()) * FIXED_POINT),
    )
    return fit_gamma(stats, prior, strength, min_shape, max_shape)
