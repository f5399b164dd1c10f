"""Shared by the traffic tests: ``apps/`` on the path, and numerical references."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

APPS = Path(__file__).resolve().parents[2] / "apps"
if str(APPS) not in sys.path:
    sys.path.insert(0, str(APPS))


def ks_critical(n: int, alpha: float = 1e-6) -> float:
    """Kolmogorov-Smirnov distance a correct sampler exceeds with probability ~alpha."""
    return math.sqrt(-math.log(alpha / 2) / (2 * n))


def ks_distance(samples: np.ndarray, grid: np.ndarray, cdf: np.ndarray) -> float:
    """sup |empirical CDF - reference CDF|, the reference given on a fine grid."""
    x = np.sort(samples)
    f = np.interp(x, grid, cdf)
    n = len(x)
    i = np.arange(1, n + 1)
    return float(max(np.max(i / n - f), np.max(f - (i - 1) / n)))


def cdf_on_grid(log_density: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Normalised cumulative trapezoid integral of exp(log_density) over ``grid``."""
    finite = np.where(np.isfinite(log_density), log_density, -np.inf)
    p = np.exp(finite - finite.max())
    c = np.concatenate([[0.0], np.cumsum((p[1:] + p[:-1]) / 2 * np.diff(grid))])
    return c / c[-1]


def gamma_density(x: np.ndarray, k: float, scale: float) -> np.ndarray:
    with np.errstate(divide="ignore"):
        log = (k - 1) * np.log(x) - x / scale - math.lgamma(k) - k * math.log(scale)
    return np.where(x > 0, np.exp(log), 0.0)
