"""One observation: a vehicle's trip between two consecutive GPS fixes.

Exactly map-matched, it names the links crossed in order, where the first fix was along the
first link and where the second fix was along the last link (fractions of the link's
length), and the time between the fixes. The travel time it observes is a sum of the
(unobserved) times spent on its links (Hunter et al., SoCC 2011, Sec. 3):

    duration = a_1 x_1 + x_2 + ... + x_{m-1} + a_m x_m

where ``x_l`` is the time to traverse all of link ``l`` and ``a_1``, ``a_m`` are the shares
of the first and last links covered. The published model takes the time to a point at
offset ``o`` of a link as ``(o / L)^r`` of the link's time (r = 2.1 there, fitted on San
Francisco data); the synthetic vehicles here drive each link at a constant speed, so the
default exponent is 1.

Noisy GPS fixes are not map-matched to one path: an observation then carries *candidate
paths* (:mod:`traffic.paths` makes them), each with the log of its prior weight (how well
its two end points fit the fixes and how direct the route between them is). The E-step
weighs them by how well each explains the duration under the current estimates (Hunter et
al., "Path and travel time inference from GPS probe vehicle data", 2009) and splits the
duration over each in proportion (:func:`traffic.estep.link_statistics`). One path with
log prior 0 is the exact map-matched case.

Text format, one observation a line (floats as ``repr``, so a round trip is exact):

    id|day|t_end_ms|duration_s|link,link,...|start_pos|end_pos

with one path, or with candidates (``;`` between the paths' fields, in the same order):

    id|day|t_end_ms|duration_s|links;links;...|start;start;...|end;end;...|prior;prior;...

``day`` is 0 for today and ``d`` for ``d`` days ago, ``t_end_ms`` the time of day of the
second fix in ms since midnight.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["FORMAT", "CandidatePath", "Observation", "interval_end"]

FORMAT = (
    "id|day|t_end_ms|duration_s|link,link,...|start_pos|end_pos, or with candidate paths "
    "id|day|t_end_ms|duration_s|links;links|start;start|end;end|log_prior;log_prior"
)


@dataclass(frozen=True, slots=True)
class CandidatePath:
    """One way the vehicle may have gone between its two fixes: the links in order, where
    each fix is along the first and last link, and the log of the path's prior weight."""

    links: tuple[int, ...]
    start_pos: float
    end_pos: float
    log_prior: float = 0.0

    def check(self, oid: str) -> None:
        if not self.links:
            raise ValueError(f"observation {oid!r} crosses no link: it needs at least one")
        if not (0.0 <= self.start_pos <= 1.0 and 0.0 <= self.end_pos <= 1.0):
            raise ValueError(
                f"observation {oid!r}: start_pos {self.start_pos} and end_pos "
                f"{self.end_pos} must be fractions of a link's length, in [0, 1]"
            )
        if len(self.links) == 1 and self.end_pos < self.start_pos:
            raise ValueError(
                f"observation {oid!r} stays on link {self.links[0]} but ends "
                f"({self.end_pos}) before it starts ({self.start_pos})"
            )
        if not math.isfinite(self.log_prior):
            raise ValueError(
                f"observation {oid!r}: log prior {self.log_prior} of path {self.links} must "
                "be finite (leave out a path that is impossible)"
            )

    def shares(self, exponent: float = 1.0) -> list[float]:
        """The share ``a_l`` of each link's travel time this path contains."""
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


@dataclass(frozen=True, slots=True)
class Observation:
    id: str
    day: int
    t_end_ms: int
    duration_s: float
    paths: tuple[CandidatePath, ...]

    def __post_init__(self) -> None:
        if not self.paths:
            raise ValueError(f"observation {self.id!r} has no path: it needs at least one")
        for path in self.paths:
            path.check(self.id)
        if not (self.duration_s > 0 and math.isfinite(self.duration_s)):
            raise ValueError(
                f"observation {self.id!r}: duration {self.duration_s} s must be positive"
            )
        if self.day < 0:
            raise ValueError(f"observation {self.id!r}: day {self.day} must be 0 or more")

    @classmethod
    def matched(
        cls,
        oid: str,
        day: int,
        t_end_ms: int,
        duration_s: float,
        links: tuple[int, ...],
        start_pos: float,
        end_pos: float,
    ) -> Observation:
        """An exactly map-matched observation: one path."""
        return cls(oid, day, t_end_ms, duration_s, (CandidatePath(links, start_pos, end_pos),))

    def links_used(self, exponent: float = 1.0, min_share: float = 0.0) -> list[int]:
        """Every link some candidate path splits the duration over (sorted, once each)."""
        return sorted({link for p in self.paths for link, _ in p.terms(exponent, min_share)})

    def format(self) -> str:
        head = f"{self.id}|{self.day}|{self.t_end_ms}|{self.duration_s!r}"
        links = ";".join(",".join(str(link) for link in p.links) for p in self.paths)
        starts = ";".join(repr(p.start_pos) for p in self.paths)
        ends = ";".join(repr(p.end_pos) for p in self.paths)
        if len(self.paths) == 1 and self.paths[0].log_prior == 0.0:
            return f"{head}|{links}|{starts}|{ends}"
        priors = ";".join(repr(p.log_prior) for p in self.paths)
        return f"{head}|{links}|{starts}|{ends}|{priors}"

    @classmethod
    def parse(cls, line: str) -> Observation:
        fields = line.strip().split("|")
        if len(fields) not in (7, 8):
            raise ValueError(
                f"observation line {line.strip()[:80]!r} has {len(fields)} fields separated by "
                f"'|'; expected 7 (one path) or 8 (candidate paths): {FORMAT}"
            )
        oid, day, t_end, duration, links, start, end = fields[:7]
        try:
            columns = [links.split(";"), start.split(";"), end.split(";")]
            if len(fields) == 8:
                columns.append(fields[7].split(";"))
            if len({len(c) for c in columns}) != 1:
                raise ValueError(
                    f"its path fields list {[len(c) for c in columns]} paths: they must agree"
                )
            paths = tuple(
                CandidatePath(
                    tuple(int(x) for x in c[0].split(",")),
                    float(c[1]),
                    float(c[2]),
                    float(c[3]) if len(c) == 4 else 0.0,
                )
                for c in zip(*columns, strict=True)
            )
            return cls(oid, int(day), int(t_end), float(duration), paths)
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
