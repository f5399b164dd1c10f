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

An observation of noisy GPS fixes has candidate paths (:mod:`traffic.paths`): each is
weighed by its prior and by how well it explains the duration under the current estimates
(:func:`path_weights`), and each candidate left is sampled as above, with its own seed, and
contributes its weight's share of the observation's statistics: the E-step of the path as
well as of the split (Hunter et al., 2009). Optionally (``link_half_life_ms``) each link's
contribution is timed by when the vehicle crossed it rather than by the second fix.

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
    "MIN_PATH_WEIGHT",
    "SamplerSettings",
    "Stats",
    "add_stats",
    "link_statistics",
    "path_weights",
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
    """One observation's problem: split ``total`` over gammas (``shapes``, ``scales``),
    with ``chains`` chains (0: the count :func:`sample_splits` is given)."""

    shapes: np.ndarray
    scales: np.ndarray
    total: float
    rng: np.random.Generator
    chains: int = 0


def sample_splits(
    problems: Sequence[Split], chains: int, burn_in: int, per_chain: int
) -> list[np.ndarray]:
    """For each problem, ``chains * per_chain`` draws of ``y`` given ``sum y = total``
    (an array of shape (samples, m); a problem's own ``chains`` when it has them), all
    problems advanced together."""
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
    counts = np.array([p.chains or chains for p in probs])
    first = np.concatenate([[0], np.cumsum(counts)])  # each problem's first row
    width = int(lengths[0])
    rows = int(first[-1])
    owner = np.repeat(np.arange(len(probs)), counts)
    k = np.ones((len(probs), width))
    inv_b = np.ones((len(probs), width))
    y = np.ones((rows, width))
    for o, prob in enumerate(probs):
        m, lo, hi = len(prob.shapes), int(first[o]), int(first[o + 1])
        k[o, :m] = prob.shapes
        inv_b[o, :m] = 1.0 / prob.scales
        if m > 1:
            start = prob.rng.gamma(prob.shapes, prob.scales, size=(hi - lo, m))
            y[lo:hi, :m] = start * (prob.total / start.sum(1, keepdims=True))
        else:
            y[lo:hi, 0] = prob.total
    k_rows, inv_rows = k[owner], inv_b[owner]
    gens = [p.rng for p in probs]
    draws = _Uniforms(gens, owner)
    active = [int(counts[lengths >= p + 2].sum()) for p in range(width - 1)]
    wrap = int(counts[lengths >= 3].sum())
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
        m, lo, hi = int(lengths[o]), int(first[o]), int(first[o + 1])
        block = out[lo:hi, :m, :]  # chains x m x per_chain
        result[i] = block.transpose(0, 2, 1).reshape((hi - lo) * per_chain, m)
    return result


class _Uniforms:
    """Uniform draws for any set of rows, each row's from its observation's generator (rows
    of one observation are consecutive, ``owner`` says whose each row is), in increasing
    row order."""

    def __init__(self, gens: list[np.random.Generator], owner: np.ndarray) -> None:
        self.gens, self.owner = gens, owner

    def __call__(self, rows: np.ndarray, count: int) -> np.ndarray:
        owners = self.owner[rows]
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


MIN_PATH_WEIGHT = 0.01  # candidate paths less likely than this (given the duration) are dropped


def path_weights(
    obs: Observation, params: Mapping[int, tuple[float, float]], settings: SamplerSettings
) -> list[tuple[int, float]]:
    """``(index in obs.paths, weight)`` of the candidate paths the E-step splits the duration
    over: each path's prior times the likelihood of the observed duration on it under the
    current estimates, normalised. A path's travel time is a sum of independent gammas
    ``Gamma(k_l, a_l theta_l)``; its density is taken as the one gamma with the same mean
    (``sum k a theta``) and variance (``sum k a^2 theta^2``). Paths below
    :data:`MIN_PATH_WEIGHT` are dropped and the rest renormalised; a path with no link left
    to split over (every share below ``min_share``) is not a candidate. One path has weight 1."""
    return [(c, w) for c, w, _ in _weighed_paths(obs, params, settings)]


def _weighed_paths(
    obs: Observation, params: Mapping[int, tuple[float, float]], settings: SamplerSettings
) -> list[tuple[int, float, list[tuple[int, float]]]]:
    """:func:`path_weights` with each path's terms, which the E-step splits over."""
    scored: list[tuple[int, float, list[tuple[int, float]]]] = []
    for c, path in enumerate(obs.paths):
        terms = path.terms(settings.exponent, settings.min_share)
        if not terms:
            continue
        if len(obs.paths) == 1:
            return [(c, 1.0, terms)]
        k = np.array([params[link][0] for link, _ in terms])
        b = np.array([params[link][1] * a for link, a in terms])
        mean, var = float((k * b).sum()), float((k * b * b).sum())
        shape, scale = mean * mean / var, var / mean
        d = obs.duration_s
        loglik = (shape - 1) * math.log(d) - d / scale - math.lgamma(shape)
        loglik -= shape * math.log(scale)
        scored.append((c, path.log_prior + loglik, terms))
    if not scored:
        return []
    top = max(s for _, s, _ in scored)
    raw = [(c, math.exp(s - top), terms) for c, s, terms in scored]
    total = sum(w for _, w, _ in raw)
    kept = [(c, w / total, terms) for c, w, terms in raw if w / total >= MIN_PATH_WEIGHT]
    total = sum(w for _, w, _ in kept)
    return [(c, w / total, terms) for c, w, terms in kept]


def link_statistics(
    batch: Sequence[tuple[Observation, float]],
    params: Mapping[int, tuple[float, float]],
    interval_ms: int,
    iteration: int,
    settings: SamplerSettings,
    link_half_life_ms: int | None = None,
) -> list[tuple[int, Stats]]:
    """The E-step of a batch of weighted observations: each one's contribution to the
    sufficient statistics of each link of its candidate paths (weighted by
    :func:`path_weights`), given the current ``(shape, scale)`` of those links. The result
    for an observation does not depend on the rest of the batch.

    With ``link_half_life_ms``, each link's contribution is timed by its own traversal
    rather than by the observation as a whole: the observation's weight (the age of its
    second fix) times ``0.5 ** ((before - duration / 2) / half_life)``, where ``before`` is
    how long before the second fix the vehicle was halfway along the link (from the mean
    of the sampled split). Links crossed after the trip's middle weigh more, those before it
    less; the weight of the prior and of the history against today's data stays as it was."""
    problems: list[Split] = []
    kept: list[tuple[list[int], np.ndarray, float, float]] = []
    for obs, weight in batch:
        if weight <= 0:
            continue
        for c, share, terms in _weighed_paths(obs, params, settings):
            links = [link for link, _ in terms]
            shares = np.array([a for _, a in terms])
            shapes = np.array([params[link][0] for link in links])
            scales = np.array([params[link][1] for link in links]) * shares
            seed = obs.id if len(obs.paths) == 1 else f"{obs.id}#{c}"
            # Chains in proportion to the path's weight: a path worth 5 % of the
            # observation needs no more samples than 5 % of its statistics are worth.
            chains = max(1, math.ceil(settings.chains * share - 1e-9))
            rng = rng_for(seed, interval_ms, iteration)
            problems.append(Split(shapes, scales, obs.duration_s, rng, chains))
            kept.append((links, shares, float(weight) * share, obs.duration_s))
    per_chain = settings.samples // settings.chains
    splits = sample_splits(problems, settings.chains, settings.burn_in, per_chain)
    out: list[tuple[int, Stats]] = []
    for (links, shares, w, duration), y in zip(kept, splits, strict=True):
        x = y / shares
        mean_x = x.mean(axis=0)
        mean_log = np.log(x).mean(axis=0)
        weights = np.full(len(links), w)
        if link_half_life_ms is not None:
            mean_y = y.mean(axis=0)
            midpoint = np.cumsum(mean_y) - mean_y / 2  # s after the first fix
            before = np.maximum(duration - midpoint, 0.0) - duration / 2
            weights = w * 0.5 ** (before * 1000 / link_half_life_ms)
        for link, lw, mx, ml in zip(links, weights.tolist(), mean_x, mean_log, strict=True):
            out.append((link, (_fixed(lw), _fixed(lw * float(mx)), _fixed(lw * float(ml)))))
    return out


def _fixed(value: float) -> int:
    if not math.isfinite(value):
        raise ValueError(f"a sufficient statistic is {value}: the E-step produced a bad sample")
    return round(value * FIXED_POINT)


def add_stats(a: Stats, b: Stats) -> Stats:
    """Sum of two links' statistics (exact, associative: the reduceByKey function)."""
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])
