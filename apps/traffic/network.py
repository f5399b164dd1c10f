"""A synthetic city and its ground truth: the road graph the estimator works on, and the
travel-time distributions the generator draws from.

The city is a grid of ``size`` x ``size`` intersections joined by two-way streets: every
street between two neighbouring intersections is two directed *links* (28 x 28 gives 3024
links). Blocks have seeded random lengths (90-220 m); every ``arterial_every``-th row and
column is an arterial (50 km/h), the rest are local streets (30 km/h).

Ground truth: the time to traverse link ``l`` entered at time of day ``t`` on day ``d`` is
Gamma(k_l, theta_l(t, d)), with a fixed shape ``k_l`` and mean

    free-flow time x delay_l x (1 + 0.1 p_d(t)) x (1 + A_l p_d(t))

where ``delay_l`` (1.15-1.6) stands for signals and turns, ``p_d`` is the morning rush-hour
profile of day ``d`` (0 before the onset, a linear ramp to 1, a plateau, a ramp back to 0)
and ``A_l`` (1-2, so travel times double or triple) is non-zero only on the *corridors*:
a few arterial lines in one direction. Every day has its own onset (within +-5 minutes of
the configured one) and strength (+-15 %): past days resemble today without equalling it.
Day 0 is today, day ``d`` is ``d`` days ago. Everything is derived from the seed.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

import numpy as np

__all__ = ["DAY_MS", "City", "CityConfig"]

DAY_MS = 86_400_000
ARTERIAL_MPS = 50 / 3.6
LOCAL_MPS = 30 / 3.6


@dataclass(frozen=True)
class CityConfig:
    """The knobs of the synthetic city. Times of day are in ms since midnight."""

    size: int = 28
    seed: int = 17
    arterial_every: int = 4
    corridors: int = 4
    rush_onset_ms: int = 7 * 3_600_000 + 30 * 60_000
    rush_ramp_ms: int = 10 * 60_000
    rush_hold_ms: int = 60 * 60_000
    block_min_m: float = 90.0
    block_max_m: float = 220.0

    def __post_init__(self) -> None:
        if self.size < 3:
            raise ValueError(f"city size {self.size} is too small: use at least 3 intersections")
        if self.arterial_every < 1:
            raise ValueError(f"arterial_every {self.arterial_every} must be at least 1")
        if not 0 < self.block_min_m <= self.block_max_m:
            raise ValueError(
                f"block lengths [{self.block_min_m}, {self.block_max_m}] m must be positive "
                "and in order"
            )


@dataclass
class City:
    """The road graph (links as parallel arrays indexed by link id) and its ground truth."""

    config: CityConfig
    link_from: np.ndarray
    link_to: np.ndarray
    length_m: np.ndarray
    speed_limit_mps: np.ndarray
    corridor: np.ndarray  # bool: the link's travel time rises in the rush hour
    shape: np.ndarray  # ground-truth Gamma shape k
    delay: np.ndarray
    rush_amplitude: np.ndarray
    out_links: list[list[int]]
    in_links: list[list[int]]
    node_x: np.ndarray  # m east of the north-west corner
    node_y: np.ndarray  # m south of it
    _trees: dict[int, list[int]] = field(default_factory=dict, repr=False)
    _back_trees: dict[int, list[int]] = field(default_factory=dict, repr=False)
    _days: dict[int, tuple[int, float]] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, config: CityConfig | None = None) -> City:
        cfg = config or CityConfig()
        rng = np.random.default_rng([cfg.seed, 0])
        n = cfg.size
        widths = rng.uniform(cfg.block_min_m, cfg.block_max_m, n - 1)  # between columns
        heights = rng.uniform(cfg.block_min_m, cfg.block_max_m, n - 1)  # between rows
        frm: list[int] = []
        to: list[int] = []
        length: list[float] = []
        arterial: list[bool] = []
        line: list[tuple[str, int, int]] = []  # (orientation, row/column, direction)
        for i in range(n):
            for j in range(n):
                a = i * n + j
                if j + 1 < n:  # a horizontal street: eastbound then westbound
                    for u, v, d in ((a, a + 1, 1), (a + 1, a, -1)):
                        frm.append(u)
                        to.append(v)
                        length.append(float(widths[j]))
                        arterial.append(i % cfg.arterial_every == 0)
                        line.append(("row", i, d))
                if i + 1 < n:  # a vertical street: southbound then northbound
                    for u, v, d in ((a, a + n, 1), (a + n, a, -1)):
                        frm.append(u)
                        to.append(v)
                        length.append(float(heights[i]))
                        arterial.append(j % cfg.arterial_every == 0)
                        line.append(("col", j, d))
        links = len(frm)
        is_arterial = np.array(arterial)
        speed = np.where(is_arterial, ARTERIAL_MPS, LOCAL_MPS)
        arterial_lines = sorted(
            {(o, k, d) for (o, k, d), art in zip(line, arterial, strict=True) if art}
        )
        chosen_idx = rng.choice(
            len(arterial_lines), min(cfg.corridors, len(arterial_lines)), replace=False
        )
        chosen = {arterial_lines[c] for c in chosen_idx}
        corridor = np.array([ln in chosen for ln in line])
        shape = rng.uniform(2.0, 6.0, links)
        delay = rng.uniform(1.15, 1.6, links)
        amplitude = np.where(corridor, rng.uniform(1.0, 2.0, links), 0.0)
        out: list[list[int]] = [[] for _ in range(n * n)]
        into: list[list[int]] = [[] for _ in range(n * n)]
        for link, (u, v) in enumerate(zip(frm, to, strict=True)):
            out[u].append(link)
            into[v].append(link)
        xs = np.concatenate([[0.0], np.cumsum(widths)])
        ys = np.concatenate([[0.0], np.cumsum(heights)])
        return cls(
            cfg,
            np.array(frm),
            np.array(to),
            np.array(length),
            speed,
            corridor,
            shape,
            delay,
            amplitude,
            out,
            into,
            np.tile(xs, n),
            np.repeat(ys, n),
        )

    # ---- the graph ------------------------------------------------------------------------
    @property
    def n_links(self) -> int:
        return len(self.link_from)

    @property
    def n_nodes(self) -> int:
        return self.config.size * self.config.size

    def free_flow_s(self) -> np.ndarray:
        """Seconds to traverse each link at its speed limit."""
        return self.length_m / self.speed_limit_mps

    def route(self, origin: int, destination: int) -> list[int]:
        """The links of the fastest route at the speed limits (what drivers follow here),
        ties broken by link id, so routes are deterministic."""
        for node in (origin, destination):
            if not 0 <= node < self.n_nodes:
                raise ValueError(
                    f"intersection {node} is not in this city: ids run from 0 to {self.n_nodes - 1}"
                )
        tree = self._trees.get(origin)
        if tree is None:
            tree = self._trees[origin] = self._shortest_path_tree(origin)
        return self._follow(tree, destination, origin, backward=True)[::-1]

    def routes(self, origin: int, destination: int) -> list[list[int]]:
        """The fastest routes at the speed limits found searching forward from ``origin``
        (:meth:`route`) and backward from ``destination``: in a grid many routes tie, and
        the two searches break ties differently. One route when they agree; ``[[]]`` when
        the two intersections are one."""
        ahead = self.route(origin, destination)
        tree = self._back_trees.get(destination)
        if tree is None:
            tree = self._back_trees[destination] = self._shortest_path_tree(destination, True)
        behind = self._follow(tree, origin, destination, backward=False)
        return [ahead] if behind == ahead else [ahead, behind]

    def _follow(self, tree: list[int], start: int, stop: int, backward: bool) -> list[int]:
        """The links of ``tree`` from intersection ``start`` to ``stop``, each link taking
        the walk to its start (``backward``: a forward search's tree, walked back from a
        destination) or to its end."""
        ends = self.link_from if backward else self.link_to
        links: list[int] = []
        node = start
        while node != stop:
            link = tree[node]
            links.append(link)
            node = int(ends[link])
        return links

    def _shortest_path_tree(self, origin: int, backward: bool = False) -> list[int]:
        """For every intersection, the last link of the fastest route from ``origin`` to
        it, or (``backward``) the first link of the fastest route from it to ``origin``."""
        cost = self.free_flow_s()
        best = [float("inf")] * self.n_nodes
        via = [-1] * self.n_nodes
        best[origin] = 0.0
        heap = [(0.0, origin)]
        ends, adjacent = (
            (self.link_from, self.in_links) if backward else (self.link_to, self.out_links)
        )
        while heap:
            d, u = heapq.heappop(heap)
            if d > best[u]:
                continue
            for link in adjacent[u]:
                v = int(ends[link])
                nd = d + float(cost[link])
                if nd < best[v]:
                    best[v], via[v] = nd, link
                    heapq.heappush(heap, (nd, v))
        return via

    # ---- ground truth -----------------------------------------------------------------------
    def day_variation(self, day: int) -> tuple[int, float]:
        """(rush onset shift in ms, rush strength factor) of a day; today is day 0."""
        if day < 0:
            raise ValueError(f"day {day} must be 0 (today) or the number of days ago")
        found = self._days.get(day)
        if found is None:
            rng = np.random.default_rng([self.config.seed, 1, day])
            found = (int(rng.integers(-300_000, 300_001)), float(rng.uniform(0.85, 1.15)))
            self._days[day] = found
        return found

    def rush_profile(self, tod_ms: float, day: int = 0) -> float:
        """The rush-hour profile p_d(t) in [0, 1] at time of day ``tod_ms`` of ``day``."""
        cfg = self.config
        shift, strength = self.day_variation(day)
        t = tod_ms - (cfg.rush_onset_ms + shift)
        ramp, hold = cfg.rush_ramp_ms, cfg.rush_hold_ms
        if t <= 0 or t >= 2 * ramp + hold:
            level = 0.0
        elif t < ramp:
            level = t / ramp
        elif t <= ramp + hold:
            level = 1.0
        else:
            level = (2 * ramp + hold - t) / ramp
        return level * strength

    def link_mean_s(self, link: int, tod_ms: float, day: int = 0) -> float:
        """Ground-truth mean travel time (s) of one link (what a vehicle entering it sees)."""
        p = self.rush_profile(tod_ms, day)
        base = float(self.length_m[link] / self.speed_limit_mps[link] * self.delay[link])
        return base * (1 + 0.1 * p) * (1 + float(self.rush_amplitude[link]) * p)

    def truth_mean_s(self, tod_ms: float, day: int = 0) -> np.ndarray:
        """Ground-truth mean travel time (s) of every link at time of day ``tod_ms``."""
        p = self.rush_profile(tod_ms, day)
        return self.free_flow_s() * self.delay * (1 + 0.1 * p) * (1 + self.rush_amplitude * p)

    def truth(self, tod_ms: float, day: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Ground-truth Gamma (shape, scale) of every link at time of day ``tod_ms``."""
        mean = self.truth_mean_s(tod_ms, day)
        return self.shape, mean / self.shape
