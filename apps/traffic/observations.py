"""One observation: a vehicle's trip between two consecutive GPS fixes, already map-matched.

It names the links crossed in order, where the first fix was along the first link and
where the second fix was along the last link (fractions of the link's length), and the
time between the fixes. The travel time it observes is a sum of the (unobserved) times
spent on its links (Hunter et al., SoCC 2011, Sec. 3):

    duration = a_1 x_1 + x_2 + ... + x_{m-1} + a_m x_m

where ``x_l`` is the time to traverse all of link ``l`` and ``a_1``, ``a_m`` are the shares
of the first and last links covered. The published model takes the time to a point at
offset ``o`` of a link as ``(o / L)^r`` of the link's time (r = 2.1 there, fitted on San
Francisco data); the synthetic vehicles here drive each link at a constant speed, so the
default exponent is 1.

Text format, one observation a line (floats as ``repr``, so a round trip is exact):

    id|day|t_end_ms|duration_s|link,link,...|start_pos|end_pos

``day`` is 0 for today and ``d`` for ``d`` days ago, ``t_end_ms`` the time of day of the
second fix in ms since midnight.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["FORMAT", "Observation", "interval_end"]

FORMAT = "id|day|t_end_ms|duration_s|link,link,...|start_pos|end_pos"


@dataclass(frozen=True, slots=True)
class Observation:
    id: str
    day: int
    t_end_ms: int
    duration_s: float
    links: tuple[int, ...]
    start_pos: float
    end_pos: float

    def __post_init__(self) -> None:
        if not self.links:
            raise ValueError(f"observation {self.id!r} crosses no link: it needs at least one")
        if not (0.0 <= self.start_pos <= 1.0 and 0.0 <= self.end_pos <= 1.0):
            raise ValueError(
                f"observation {self.id!r}: start_pos {self.start_pos} and end_pos "
                f"{self.end_pos} must be fractions of a link's length, in [0, 1]"
            )
        if len(self.links) == 1 and self.end_pos < self.start_pos:
            raise ValueError(
                f"observation {self.id!r} stays on link {self.links[0]} but ends "
                f"({self.end_pos}) before it starts ({self.start_pos})"
            )
        if not (self.duration_s > 0 and math.isfinite(self.duration_s)):
            raise ValueError(
                f"observation {self.id!r}: duration {self.duration_s} s must be positive"
            )
        if self.day < 0:
            raise ValueError(f"observation {self.id!r}: day {self.day} must be 0 or more")

    def shares(self, exponent: float = 1.0) -> list[float]:
        """The share ``a_l`` of each link's travel time this observation contains."""
        r = exponent
        if len(self.links) == 1:
            return [self.end_pos**r - self.start_pos**r]
        middle = [1.0] * (len(self.links) - 2)
        return [1.0 - self.start_pos**r, *middle, self.end_pos**r]

    def terms(self, exponent: float = 1.0, min_share: float = 0.0) -> list[tuple[int, float]]:
        """``(link, share)`` of the links the E-step splits the duration over: an end link
        covered by less than ``min_share`` is left out (its few metres say nothing about the
        link and would only slow the sampler down); an empty list means nothing is left."""
        return [
            (link, a)
            for link, a in zip(self.links, self.shares(exponent), strict=True)
            if a >= min_share and a > 0.0
        ]

    def format(self) -> str:
        links = ",".join(str(link) for link in self.links)
        return (
            f"{self.id}|{self.day}|{self.t_end_ms}|{self.duration_s!r}|{links}|"
            f"{self.start_pos!r}|{self.end_pos!r}"
        )

    @classmethod
    def parse(cls, line: str) -> Observation:
        fields = line.strip().split("|")
        if len(fields) != 7:
            raise ValueError(
                f"observation line {line.strip()[:80]!r} has {len(fields)} fields separated by "
                f"'|'; expected 7: {FORMAT}"
            )
        oid, day, t_end, duration, links, start, end = fields
        try:
            return cls(
                oid,
                int(day),
                int(t_end),
                float(duration),
                tuple(int(x) for x in links.split(",")),
                float(start),
                float(end),
            )
        except ValueError as exc:
            raise ValueError(
                f"observation line {line.strip()[:80]!r} is malformed ({exc}); expected {FORMAT}"
            ) from exc


def interval_end(t_ms: int, batch_ms: int) -> int:
    """The end of the interval ``(T - batch, T]`` that an observation made at ``t_ms`` falls
    in: how the generator groups "today" into the stream's intervals and past days into the
    slots the history is looked up by."""
    if batch_ms <= 0:
        raise ValueError(f"batch interval {batch_ms} ms must be positive")
    return -(-t_ms // batch_ms) * batch_ms
