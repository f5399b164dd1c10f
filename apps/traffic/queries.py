"""What the shell asks of the current estimates, as plain functions of ``(link, (k, theta))``
pairs (``apps/traffic_em.py`` runs them on the estimates RDD)."""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["RouteTime", "SlowLink", "route_time", "slowest"]


class ParamsByLink(Protocol):
    def __getitem__(self, link: int, /) -> tuple[float, float]: ...


@dataclass(frozen=True)
class SlowLink:
    link: int
    speed_kmh: float  # length / estimated mean travel time
    mean_s: float
    limit_kmh: float


@dataclass(frozen=True)
class RouteTime:
    mean_s: float
    sd_s: float
    links: int
    estimated: int  # how many of the links have an estimate (the rest: their prior)


def slowest(
    estimates: Iterable[tuple[int, tuple[float, float]]],
    length_m: Sequence[float],
    limit_mps: Sequence[float],
    n: int,
) -> list[SlowLink]:
    """The ``n`` links with the lowest estimated speed (ties by link id)."""
    if n < 1:
        raise ValueError(f"asked for the {n} slowest links: ask for at least 1")

    def speed(item: tuple[int, tuple[float, float]]) -> tuple[float, int]:
        link, (k, theta) = item
        return (length_m[link] / (k * theta), link)

    best = heapq.nsmallest(n, estimates, key=speed)
    return [
        SlowLink(
            link,
            3.6 * length_m[link] / (k * theta),
            k * theta,
            3.6 * limit_mps[link],
        )
        for link, (k, theta) in best
    ]


def route_time(
    links: Sequence[int],
    estimates: Mapping[int, tuple[float, float]],
    priors: ParamsByLink,
) -> RouteTime:
    """Mean and standard deviation of the time to drive ``links`` (independent Gamma link
    times: means and variances add)."""
    mean = var = 0.0
    found = 0
    for link in links:
        if link in estimates:
            k, theta = estimates[link]
            found += 1
        else:
            k, theta = priors[link]
        mean += k * theta
        var += k * theta * theta
    return RouteTime(mean, math.sqrt(var), len(links), found)
