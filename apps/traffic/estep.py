"""The E-step: how an observation's duration splits over its links.

An observation says ``sum_l a_l x_l = d`` with ``x_l ~ Gamma(k_l, theta_l)`` independent.
With ``y_l = a_l x_l ~ Gamma(k_l, b_l)``, ``b_l = a_l theta_l``, the E-step needs samples of
``y`` given ``sum y = d``. Conditioned on their sum, gammas with *different scales* are not
split by a Dirichlet (nor by normalising independent gamma draws, the "Gamma-Dirichlet"
shortcut of Hunter's thesis): the split depends on the sum itself. We use Gibbs over
neighbouring pairs, the scheme of the original Mobile Millennium code: given the others, a
pair ``(y_i, y_j)`` keeps its sum ``s`` and ``u = y_i / s`` has the density

    p(u) ∝ u^(k_i - 1) (1 - u)^(k_j - 1) exp(g u),   g = s (1/b_j - 1/b_i)

on [0, 1] (the original expanded ``exp(g u)`` into a Beta mixture truncated at 50 terms).
We sample it exactly by rejection (:mod:`traffic.pair_sampler`): with shapes >= 1 it is
log-concave, so tangents bound it from above. With two links one pair update is an exact
draw of the whole split; with more, ``chains`` chains per observation start from a
normalised-gamma split, run ``burn_in`` sweeps (pairs (0,1), (1,2), ..., (m-1, 0)), then
give one sample per sweep (``samples`` in all, the paper's 300 by default).

Many observations are sampled together (numpy over all their chains) but each draws its
random numbers from its own generator, :func:`rng_for` (record id, interval, iteration),
in the same order as it would alone: an E-step recomputed after a failure, or in the
pure-Python reference, gives the same samples whatever else shares its batch. Each
observation's contribution to a link's sufficient statistics (weight, weighted mean of x,
weighted mean of log x over its samples) is returned in fixed point (integers in units of
2^-40), so sums are exact and do not depend on the order Spark combines them in.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from traffic.observations import Observation
from traffic.pair_sampler import sample_tilted_beta

__all__ = [
    "FIXED_POINT",
    "SamplerSettings",
    "Stats",
    "add_stats",
    "link_statistics",
    "rng_for",
    "sample_splits",
]

FIXED_POINT = 2**40  # sufficient statistics are integers in units of 1 / FIXED_POINT

Stats = tuple[int, int, int]  # (weight, weight * mean x, weight * mean log x), fixed point


@dataclass(frozen=True)
class SamplerSettings:
    """``samples`` per observation from ``chains`` Gibbs chains after ``burn_in`` sweeps;
    the partial-link exponent and the smallest end-link share kept (see observations)."""

    samples: int = 300
    chains: int = 30
    burn_in: int = 5
    exponent: float = 1.0
    min_share: float = 0.01

    def __post_init__(self) -> None:
        if self.chains < 1 or self.burn_in < 1 or self.samples < 1:
            raise ValueError(
                f"samples {self.samples}, chains {self.chains} and burn_in {self.burn_in} "
                "must be at least 1"
            )
        if self.samples % self.chains:
            raise ValueError(
                f"samples {self.samples} must be a multiple of chains {self.chains} (each "
                f"chain gives samples / chains of them), e.g. {self.chains * 10}"
            )
        if self.exponent <= 0 or not 0 <= self.min_share < 1:
            raise ValueError(
                f"exponent {self.exponent} must be positive and min_share {self.min_share} "
                "in [0, 1)"
            )


def rng_for(record_id: str, interval_ms: int, iteration: int) -> np.random.Generator:
    """The generator of one observation's E-step in one interval and EM iteration."""
    digest = hashlib.blake2b(record_id.encode(), digest_size=16).digest()
    seq = np.random.SeedSequence([int.from_bytes(digest, "little"), interval_ms, iteration])
    return np.random.Generator(np.random.PCG64(seq))


@dataclass
class Split:
    """One observation's problem: split ``total`` over gammas (``shapes``, ``scales``)."""

    shapes: np.ndarray
    scales: np.ndarray
    total: float
    rng: np.random.Generator


def sample_splits(
    problems: Sequence[Split], chains: int, burn_in: int, per_chain: int
) -> list[np.ndarray]:
    """For each problem, ``chains * per_chain`` draws of ``y`` given ``sum y = total``
    (an array of shape (samples, m)), all problems advanced together."""
    if not problems:
        return []
    for prob in problems:
        if np.any(prob.shapes < 1):
            raise ValueError(
                f"gamma shapes {prob.shapes.tolist()} must be at least 1 for the exact pair "
                "sampler (its envelope needs a log-concave density); keep the M-step's "
                "min_shape >= 1"
            )
    # Longest observations first: the rows taking part in pair (p, p+1) are then a prefix.
    order = sorted(range(len(problems)), key=lambda i: -len(problems[i].shapes))
    probs = [problems[i] for i in order]
    lengths = np.array([len(p.shapes) for p in probs])
    width = int(lengths[0])
    rows = len(probs) * chains
    owner = np.repeat(np.arange(len(probs)), chains)
    k = np.ones((len(probs), width))
    inv_b = np.ones((len(probs), width))
    y = np.ones((rows, width))
    for o, prob in enumerate(probs):
        m = len(prob.shapes)
        k[o, :m] = prob.shapes
        inv_b[o, :m] = 1.0 / prob.scales
        if m > 1:
            start = prob.rng.gamma(prob.shapes, prob.scales, size=(chains, m))
            y[o * chains : (o + 1) * chains, :m] = start * (
                prob.total / start.sum(1, keepdims=True)
            )
        else:
            y[o * chains : (o + 1) * chains, 0] = prob.total
    k_rows, inv_rows = k[owner], inv_b[owner]
    gens = [p.rng for p in probs]
    draws = _Uniforms(gens, chains)
    active = [int((lengths >= p + 2).sum()) * chains for p in range(width - 1)]
    wrap = int((lengths >= 3).sum()) * chains
    wrap_col = (lengths[owner[:wrap]] - 1) if wrap else np.zeros(0, dtype=int)
    out = np.zeros((rows, width, per_chain))

    def sweep() -> None:
        for p in range(width - 1):
            n = active[p]
            if n:
                _pair_update(
                    y, k_rows, inv_rows, np.arange(n), np.full(n, p), np.full(n, p + 1), draws
                )
        if wrap:
            idx = np.arange(wrap)
            _pair_update(y, k_rows, inv_rows, idx, wrap_col, np.zeros(wrap, dtype=int), draws)

    for _ in range(burn_in):
        sweep()
    for t in range(per_chain):
        sweep()
        out[:, :, t] = y
    result: list[np.ndarray] = [np.empty(0)] * len(problems)
    for o, i in enumerate(order):
        m = int(lengths[o])
        block = out[o * chains : (o + 1) * chains, :m, :]  # chains x m x per_chain
        result[i] = block.transpose(0, 2, 1).reshape(chains * per_chain, m)
    return result


class _Uniforms:
    """Uniform draws for any set of rows, each row's from its observation's generator (rows
    of one observation are consecutive), in increasing row order."""

    def __init__(self, gens: list[np.random.Generator], chains: int) -> None:
        self.gens, self.chains = gens, chains

    def __call__(self, rows: np.ndarray, count: int) -> np.ndarray:
        owners = rows // self.chains
        out = np.empty((len(rows), count))
        cuts = np.flatnonzero(np.diff(owners)) + 1
        for s, e in zip([0, *cuts.tolist()], [*cuts.tolist(), len(rows)], strict=True):
            out[s:e] = self.gens[owners[s]].random((e - s, count))
        return out


def _pair_update(
    y: np.ndarray,
    k: np.ndarray,
    inv_b: np.ndarray,
    rows: np.ndarray,
    i: np.ndarray,
    j: np.ndarray,
    draws: _Uniforms,
) -> None:
    """Redraw (y_i, y_j) of the given rows from their exact conditional given their sum."""
    s = y[rows, i] + y[rows, j]
    g = s * (inv_b[rows, j] - inv_b[rows, i])
    # Sample the share of the side the mass leans away from (density ∝ z^(p-1) (1-z)^(q-1)
    # e^(-lam z), lam >= 0), so the small part is computed directly, to full precision.
    flip = g > 0
    p = np.where(flip, k[rows, j], k[rows, i])
    q = np.where(flip, k[rows, i], k[rows, j])
    z = sample_tilted_beta(p, q, np.abs(g), lambda sub, n: draws(rows[sub], n))
    small = s * z
    y[rows, i] = np.where(flip, s - small, small)
    y[rows, j] = np.where(flip, small, s - small)


def link_statistics(
    batch: Sequence[tuple[Observation, float]],
    params: Mapping[int, tuple[float, float]],
    interval_ms: int,
    iteration: int,
    settings: SamplerSettings,
) -> list[tuple[int, Stats]]:
    """The E-step of a batch of weighted observations: each one's contribution to the
    sufficient statistics of each of its links, given the current ``(shape, scale)`` of
    those links. The result for an observation does not depend on the rest of the batch."""
    problems: list[Split] = []
    kept: list[tuple[list[int], np.ndarray, float]] = []
    for obs, weight in batch:
        terms = obs.terms(settings.exponent, settings.min_share)
        if not terms or weight <= 0:
            continue
        links = [link for link, _ in terms]
        shares = np.array([a for _, a in terms])
        shapes = np.array([params[link][0] for link in links])
        scales = np.array([params[link][1] for link in links]) * shares
        problems.append(
            Split(shapes, scales, obs.duration_s, rng_for(obs.id, interval_ms, iteration))
        )
        kept.append((links, shares, float(weight)))
    per_chain = settings.samples // settings.chains
    splits = sample_splits(problems, settings.chains, settings.burn_in, per_chain)
    out: list[tuple[int, Stats]] = []
    for (links, shares, w), y in zip(kept, splits, strict=True):
        x = y / shares
        mean_x = x.mean(axis=0)
        mean_log = np.log(x).mean(axis=0)
        for link, mx, ml in zip(links, mean_x, mean_log, strict=True):
            out.append((link, (_fixed(w), _fixed(w * float(mx)), _fixed(w * float(ml)))))
    return out


def _fixed(value: float) -> int:
    if not math.isfinite(value):
        raise ValueError(f"a sufficient statistic is {value}: the E-step produced a bad sample")
    return round(value * FIXED_POINT)


def add_stats(a: Stats, b: Stats) -> Stats:
    """Sum of two links' statistics (exact, associative: the reduceByKey function)."""
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])
