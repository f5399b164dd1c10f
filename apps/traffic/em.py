"""Online EM over a sliding window plus history, and the batch EM it is compared with.

Every interval ending at time of day ``now`` (the paper: every 5 s) the online algorithm
runs ``iterations`` EM iterations over

- the *live* window: today's observations that arrived in the last ``window_ms``, each
  weighted ``0.5 ** (age / half_life_ms)`` by the age of its second fix, and
- the *history*: observations of the same window of the time of day on each of the past
  ``history_days`` days, weighted ``history_weight * day_decay ** (d - 1)`` times the same
  age weight (real-time data alone is too sparse: it overfits, the paper's Sec. 6.3.2);

starting from the previous interval's estimates (warm start). The Mobile Millennium
streaming code used the same shape (a 120 s window with a 60 s half-life, past days weighted
0.9 per day: the defaults here, ``history_weight * day_decay ** (d - 1) = 0.9 ** d``). Its
smoothing strength was 3 pseudo-observations; ours defaults to 1, because with sparse data
(about one observation per link in a 2-minute window) 3 pseudo-observations at the speed
limit held the estimates back: they reflected a rush hour 1-4.5 minutes later and were less
accurate (``bench/paper/traffic.py``, apps/traffic/README.md). A link no observation of the
interval covers keeps its previous estimate; a link never covered has its prior.

One EM iteration: the E-step of every weighted observation (:mod:`traffic.estep`, seeded
by the observation, the interval and the iteration), exact sums of the statistics per link,
the M-step per link (:mod:`traffic.mstep`). The streaming program computes exactly these
sums in Spark, so its estimates equal :class:`OnlineEM`'s.

The batch baseline (the paper's previous implementation) runs EM from the priors over all
of the last 30 minutes, unweighted, once per 30 minutes.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from traffic.estep import SamplerSettings, Stats, add_stats, link_statistics
from traffic.mstep import fit_gamma
from traffic.network import City
from traffic.observations import Observation

__all__ = [
    "EMSettings",
    "OnlineEM",
    "Params",
    "Priors",
    "batch_em",
    "em_interval",
    "fit_links",
    "history_in_window",
    "observation_weight",
]

Params = tuple[float, float]  # (shape k, scale theta) of one link


@dataclass(frozen=True)
class EMSettings:
    """Everything the estimator is configured with (times in ms)."""

    sampler: SamplerSettings = field(default_factory=SamplerSettings)
    iterations: int = 2
    window_ms: int = 120_000
    half_life_ms: int = 60_000
    history_days: int = 10
    day_decay: float = 0.9
    history_weight: float = 0.9
    prior_strength: float = 1.0
    prior_shape: float = 3.0
    prior_delay: float = 1.0
    min_shape: float = 1.0
    max_shape: float = 1000.0
    link_timing: bool = False  # weigh each link by the age of its own traversal
    # The past days are known ahead of now too: their window ends this much after now (the
    # time of day), so that their traversals are centred nearer now than today's can be.
    history_lead_ms: int = 0

    @property
    def link_half_life_ms(self) -> int | None:
        """What the E-step times each link's contribution with (None: by the second fix)."""
        return self.half_life_ms if self.link_timing else None

    def __post_init__(self) -> None:
        if self.iterations < 1:
            raise ValueError(f"iterations {self.iterations} must be at least 1")
        if self.window_ms <= 0 or self.half_life_ms <= 0:
            raise ValueError(
                f"window {self.window_ms} ms and half-life {self.half_life_ms} ms must be positive"
            )
        if not 0 <= self.history_lead_ms <= self.window_ms:
            raise ValueError(
                f"history_lead_ms {self.history_lead_ms} must be in [0, window {self.window_ms}]"
                ": how far after now the past days' window ends"
            )
        if self.history_days < 0 or not 0 < self.day_decay <= 1 or self.history_weight < 0:
            raise ValueError(
                f"history_days {self.history_days} must be >= 0, day_decay {self.day_decay} "
                f"in (0, 1] and history_weight {self.history_weight} >= 0"
            )
        if self.min_shape < 1 or self.prior_shape < 1:
            raise ValueError(
                f"min_shape {self.min_shape} and prior_shape {self.prior_shape} must be at "
                "least 1: the exact pair sampler needs log-concave conditionals"
            )
        if self.prior_strength < 0 or self.prior_delay <= 0:
            raise ValueError(
                f"prior_strength {self.prior_strength} must be >= 0 and prior_delay "
                f"{self.prior_delay} positive"
            )


class Priors:
    """Per link, the prior Gamma: shape ``prior_shape`` and mean ``prior_delay`` times the
    time to drive the link at its speed limit."""

    def __init__(self, city: City, settings: EMSettings) -> None:
        mean = city.free_flow_s() * settings.prior_delay
        self.shape = settings.prior_shape
        self.scale = (mean / settings.prior_shape).tolist()

    def __getitem__(self, link: int) -> Params:
        return (self.shape, self.scale[link])

    def __len__(self) -> int:
        return len(self.scale)


def observation_weight(obs: Observation, now_ms: int, settings: EMSettings) -> float:
    """The weight of an observation in the interval ending at time of day ``now_ms``."""
    age = max(0, now_ms - obs.t_end_ms)
    w = 0.5 ** (age / settings.half_life_ms)
    if obs.day > 0:
        w *= settings.history_weight * settings.day_decay ** (obs.day - 1)
    return w


def fit_links(sums: dict[int, Stats], priors: Priors, settings: EMSettings) -> dict[int, Params]:
    """The M-step of every link with statistics."""
    return {
        link: fit_gamma(
            stats, priors[link], settings.prior_strength, settings.min_shape, settings.max_shape
        )
        for link, stats in sums.items()
    }


def em_interval(
    data: Sequence[tuple[Observation, float]],
    state: dict[int, Params],
    now_ms: int,
    priors: Priors,
    settings: EMSettings,
    iterations: int | None = None,
) -> dict[int, Params]:
    """EM iterations over weighted observations, starting from ``state`` (priors where it
    has no estimate): the new estimates of every link the last iteration's E-step split a
    duration over (every link the observations cover, unless a candidate path of theirs
    lost all its weight; a link without statistics in an iteration keeps its estimate)."""
    data = [(obs, w) for obs, w in data if w > 0]
    sampler = settings.sampler
    needed = {
        link for obs, _ in data for link in obs.links_used(sampler.exponent, sampler.min_share)
    }
    current: dict[int, Params] = {}
    for link in needed:
        current[link] = state.get(link) or priors[link]
    fits: dict[int, Params] = {}
    for it in range(settings.iterations if iterations is None else iterations):
        sums: dict[int, Stats] = {}
        stats_of = link_statistics(
            data, current, now_ms, it, settings.sampler, settings.link_half_life_ms
        )
        for link, stats in stats_of:
            sums[link] = add_stats(sums[link], stats) if link in sums else stats
        fits = fit_links(sums, priors, settings)
        current = {**current, **fits}
    return fits


def history_in_window(
    history: Sequence[Observation], history_ends: Sequence[int], now_ms: int, window_ms: int
) -> list[Observation]:
    """Past days' observations whose second fix is in ``(now - window, now]`` (time of day);
    ``history`` sorted by ``t_end_ms``, ``history_ends`` its ``t_end_ms`` column."""
    lo = bisect.bisect_right(history_ends, now_ms - window_ms)
    hi = bisect.bisect_right(history_ends, now_ms)
    return list(history[lo:hi])


class OnlineEM:
    """The online estimator in plain Python: feed it each interval's new observations."""

    def __init__(
        self, city: City, settings: EMSettings, history: Iterable[Observation] = ()
    ) -> None:
        self.settings = settings
        self.priors = Priors(city, settings)
        self.state: dict[int, Params] = {}
        days = settings.history_days
        self.history = sorted(
            (o for o in history if 0 < o.day <= days), key=lambda o: (o.t_end_ms, o.id)
        )
        self.history_ends = [o.t_end_ms for o in self.history]
        self.live: deque[tuple[int, list[Observation]]] = deque()

    def window_data(self, now_ms: int) -> list[tuple[Observation, float]]:
        """The weighted observations of the interval ending at ``now_ms``."""
        s = self.settings
        live = [o for _, batch in self.live for o in batch]
        ahead = now_ms + s.history_lead_ms
        past = history_in_window(self.history, self.history_ends, ahead, s.window_ms)
        weighted = [(o, observation_weight(o, now_ms, s)) for o in live]
        weighted += [(o, observation_weight(o, ahead, s)) for o in past]
        return [(o, w) for o, w in weighted if w > 0]

    def slide(self, now_ms: int, arrivals: Sequence[Observation]) -> None:
        """Move the live window to the interval ending at ``now_ms`` (no EM)."""
        self.live.append((now_ms, list(arrivals)))
        while self.live and self.live[0][0] <= now_ms - self.settings.window_ms:
            self.live.popleft()

    def step(self, now_ms: int, arrivals: Sequence[Observation]) -> dict[int, Params]:
        """One interval: take its new observations, run EM, return the links it updated."""
        self.slide(now_ms, arrivals)
        fits = em_interval(self.window_data(now_ms), self.state, now_ms, self.priors, self.settings)
        self.state.update(fits)
        return fits

    def means(self) -> np.ndarray:
        """Estimated mean travel time of every link (the prior's where never estimated)."""
        return estimate_means(self.state, self.priors)


def estimate_means(state: dict[int, Params], priors: Priors) -> np.ndarray:
    out = np.array([priors[link][0] * priors[link][1] for link in range(len(priors))])
    for link, (k, theta) in state.items():
        out[link] = k * theta
    return out


def batch_em(
    observations: Sequence[Observation],
    now_ms: int,
    city: City,
    settings: EMSettings,
    window_ms: int = 30 * 60_000,
    iterations: int = 10,
) -> dict[int, Params]:
    """The batch baseline: EM from the priors over every observation of today in
    ``(now - window, now]``, unweighted; ``iterations`` iterations."""
    data = [(o, 1.0) for o in observations if now_ms - window_ms < o.t_end_ms <= now_ms]
    return em_interval(data, {}, now_ms, Priors(city, settings), settings, iterations)
