"""Path inference from noisy GPS fixes: the candidate paths of one observation.

A GPS fix is a point a few metres off the road. Every link within ``radius_m`` of it is a
*candidate projection* (the nearest point of the link to the fix, a position along it);
on a two-way street both directions are. For two consecutive fixes every pair of
projections gives candidate paths: the first link from its projection on, the routes
between the two links (the fastest at the speed limits, found from either end: in a grid
many routes tie, and the two searches break ties differently), and the last link up to its
projection. Each path's log prior is the GPS likelihood of its two projections (isotropic
Gaussian noise, ``sigma_m``) plus a detour term, ``-|route length - distance between the
fixes| / detour_m`` (Newson and Krumm's transition model, as in Hunter et al.'s path
inference, 2009). The E-step then weighs the candidates by the observed duration as well
(:func:`traffic.estep.path_weights`): a path that the duration says is too long or too
short for the current estimates loses weight.

Consecutive observations of one vehicle are inferred independently here (each pair of
fixes on its own); the published path inference runs one conditional random field over the
whole trajectory, so a fix's projection is shared by the two observations it ends and
starts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from traffic.network import City
from traffic.observations import CandidatePath

__all__ = ["GpsModel", "Projection", "candidate_paths", "link_point", "projections"]


@dataclass(frozen=True)
class GpsModel:
    """The noise of the fixes and how candidates are chosen (metres)."""

    sigma_m: float = 15.0
    radius_m: float = 45.0
    detour_m: float = 50.0
    max_paths: int = 8
    end_tolerance: float = 0.02  # of a link: a path covering less of its end link ends before
    min_log_prior: float = -7.0  # below the best path's (a prior weight under 1e-3): left out

    def __post_init__(self) -> None:
        if not (self.sigma_m > 0 and self.radius_m > 0 and self.detour_m > 0):
            raise ValueError(
                f"sigma_m {self.sigma_m}, radius_m {self.radius_m} and detour_m "
                f"{self.detour_m} must be positive"
            )
        if self.max_paths < 1:
            raise ValueError(f"max_paths {self.max_paths} must be at least 1")


@dataclass(frozen=True, slots=True)
class Projection:
    link: int
    position: float  # fraction of the link's length
    distance_m: float


def link_point(city: City, link: int, position: float) -> tuple[float, float]:
    """The point at ``position`` (a fraction of its length) along ``link``."""
    u, v = int(city.link_from[link]), int(city.link_to[link])
    x = city.node_x[u] + position * (city.node_x[v] - city.node_x[u])
    y = city.node_y[u] + position * (city.node_y[v] - city.node_y[u])
    return float(x), float(y)


def projections(city: City, x: float, y: float, radius_m: float) -> list[Projection]:
    """Every link within ``radius_m`` of the point, with the nearest point along it."""
    ux, uy = city.node_x[city.link_from], city.node_y[city.link_from]
    dx, dy = city.node_x[city.link_to] - ux, city.node_y[city.link_to] - uy
    t = np.clip(((x - ux) * dx + (y - uy) * dy) / (dx * dx + dy * dy), 0.0, 1.0)
    dist = np.hypot(ux + t * dx - x, uy + t * dy - y)
    near = np.flatnonzero(dist <= radius_m)
    return [Projection(int(link), float(t[link]), float(dist[link])) for link in near]


def candidate_paths(
    city: City, first: tuple[float, float], second: tuple[float, float], gps: GpsModel
) -> list[CandidatePath]:
    """The candidate paths between two fixes, most likely first (ties by links); empty when
    a fix has no link within the radius or no projections connect."""
    straight = math.dist(first, second)
    starts = projections(city, *first, gps.radius_m)
    ends = projections(city, *second, gps.radius_m)
    found: dict[tuple[int, ...], tuple[float, float, float]] = {}  # links -> prior, start, end
    two_var = 2 * gps.sigma_m**2
    for a in starts:
        for b in ends:
            gps_ll = -(a.distance_m**2 + b.distance_m**2) / two_var
            options: list[tuple[tuple[int, ...], float]] = []
            if a.link == b.link and b.position >= a.position:
                length = (b.position - a.position) * float(city.length_m[a.link])
                options.append(((a.link,), length))
            else:
                start, end = int(city.link_to[a.link]), int(city.link_from[b.link])
                for middle in city.routes(start, end):
                    links = (a.link, *middle, b.link)
                    if len(set(links)) < len(links):
                        continue  # a loop: not a way anyone drives between two fixes
                    length = (1 - a.position) * float(city.length_m[a.link])
                    length += b.position * float(city.length_m[b.link])
                    length += float(city.length_m[middle].sum()) if middle else 0.0
                    options.append((links, length))
            for links, length in options:
                log_prior = gps_ll - abs(length - straight) / gps.detour_m
                path = _canonical(links, a.position, b.position, gps.end_tolerance)
                if path[0] not in found or log_prior > found[path[0]][0]:
                    found[path[0]] = (log_prior, path[1], path[2])
    if not found:
        return []
    ranked = sorted(found.items(), key=lambda kv: (-kv[1][0], kv[0]))[: gps.max_paths]
    top = ranked[0][1][0]
    return [
        CandidatePath(links, start, end, log_prior - top)
        for links, (log_prior, start, end) in ranked
        if log_prior - top >= gps.min_log_prior
    ]


def _canonical(
    links: tuple[int, ...], start: float, end: float, tolerance: float
) -> tuple[tuple[int, ...], float, float]:
    """A fix at (or a few metres from) an intersection projects onto the end of one link
    and the start of the next: it is one path with or without the link it (nearly) does
    not cover. Paths are told apart by their links."""
    if len(links) > 1 and start >= 1.0 - tolerance:
        links, start = links[1:], 0.0
    if len(links) > 1 and end <= tolerance:
        links, end = links[:-1], 1.0
    return links, start, end
