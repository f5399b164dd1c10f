"""A deterministic, seeded stream of video-player events (no downloads, no wall clock).

Sessions arrive as a Poisson process whose rate keeps ``sessions`` sessions alive on
average (Little's law: rate = sessions / mean session life), after an optional "premiere"
burst of ``sessions`` joins over the first ``burst_s`` seconds so that the load is there
from the start. Each session is simulated on its own random generator, seeded by (seed,
session id), so its events do not depend on what else happens:

* a join with its dimensions (customer and its content, CDN, region and an ISP of that
  region, device, the device's top bitrate) and a viewer id (a skewed pool: some viewers
  watch several sessions);
* a join failure (error code, nothing more), or an exit before the video started, or
* heartbeats every ``heartbeat_ms``: the first reports the startup time as its buffering,
  later ones occasional rebuffering, the bitrate (a step down now and then) and dropped
  frames; the session lasts a log-normally distributed time (median ``median_session_s``,
  shape ``session_sigma``: a long tail), then exits (buffering or not), fails, or goes
  silent without an exit (``p_silent``: the monitor's timeout must close it);
* the incident: while it lasts, sessions on one CDN in one region rebuffer heavily, drop to
  low bitrates, fail to join more often and quit while buffering.

The events of slice k are those with time in [origin + k*slice, origin + (k+1)*slice),
sorted by (time, session id). :func:`write_slice` writes one slice as a file under a hidden
name, sets its modification time to the slice's start and renames it into a watched
directory: a file stream then reads slice k in the interval that ends at origin + (k+1)*slice,
and so does a replay that assigns files to intervals by modification time.

    PYTHONPATH=apps python -m video.generator /data/in --seconds 60 --sessions 5000 --live
"""

from __future__ import annotations

import argparse
import heapq
import math
import os
import random
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .events import ERROR, EXIT, HEARTBEAT, JOIN, Event, format_event

__all__ = [
    "EventGenerator",
    "GeneratorConfig",
    "Incident",
    "LiveWriter",
    "slice_file_name",
    "write_slice",
    "write_slices",
]

CUSTOMERS = (
    ("streamco", 30),
    ("newsnet", 20),
    ("sportsplus", 20),
    ("moviebox", 15),
    ("kidstv", 10),
    ("musiclive", 5),
)
TITLES_PER_CUSTOMER = 8
CDNS = (("akamai", 35), ("level3", 20), ("cloudfront", 20), ("limelight", 15), ("fastly", 10))
REGIONS = (("us-east", 30), ("eu-west", 25), ("us-west", 20), ("asia", 15), ("latam", 10))
ISPS = {
    "us-east": ("comcast", "verizon", "att"),
    "us-west": ("comcast", "charter", "att"),
    "eu-west": ("bt", "orange", "vodafone"),
    "asia": ("ntt", "singtel"),
    "latam": ("claro", "telefonica"),
}
DEVICES = (("ios", 25), ("android", 25), ("web", 25), ("roku", 12), ("smarttv", 13))
LADDER = (400, 800, 1500, 3000, 6000)  # kbps
TOP_RUNG = {"ios": 3, "android": 3, "web": 3, "roku": 4, "smarttv": 4}
JOIN_ERRORS = ("CDN_403", "MANIFEST_TIMEOUT", "DRM_DENIED", "NETWORK")
PLAYBACK_ERRORS = ("DECODER", "NETWORK", "CDN_5XX")


@dataclass(frozen=True)
class Incident:
    """One CDN in one region buffers heavily from ``start_s`` for ``length_s`` (seconds after
    the origin)."""

    cdn: str = "level3"
    region: str = "eu-west"
    start_s: float = 25.0
    length_s: float = 20.0


@dataclass(frozen=True)
class GeneratorConfig:
    seed: int = 1
    origin_ms: int = 0  # event time of the start of slice 0 (epoch ms)
    slice_ms: int = 1000  # one file per slice; match the monitor's batch interval
    sessions: int = 2000  # sessions alive on average
    burst_s: float = 10.0  # the first `sessions` joins arrive over this (0: no burst)
    median_session_s: float = 60.0
    session_sigma: float = 1.2  # log-normal shape: larger is a longer tail
    max_session_s: float = 4 * 3600.0
    heartbeat_ms: int = 5000
    viewers: int | None = None  # viewer id pool (default: 2 x sessions)
    p_join_failure: float = 0.03
    p_exit_before_start: float = 0.03
    p_silent: float = 0.08  # of started sessions: no exit, just silence
    p_playback_failure: float = 0.02
    p_rebuffer: float = 0.03  # per heartbeat, outside the incident
    incident: Incident | None = field(default_factory=Incident)

    def __post_init__(self) -> None:
        if self.slice_ms <= 0 or self.heartbeat_ms < 200:
            raise ValueError(
                f"generator slice_ms {self.slice_ms} must be positive and heartbeat_ms "
                f"{self.heartbeat_ms} at least 200 ms (a startup must fit in one heartbeat)"
            )
        if self.sessions < 0:
            raise ValueError(f"generator sessions {self.sessions} must be 0 or more")
        for name in ("p_join_failure", "p_exit_before_start", "p_silent", "p_playback_failure"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"generator {name} {getattr(self, name)} must be in [0, 1]")

    @property
    def mean_session_s(self) -> float:
        """Mean life of a session (the log-normal's mean, ignoring the cap)."""
        return self.median_session_s * math.exp(self.session_sigma**2 / 2)

    @property
    def arrivals_per_s(self) -> float:
        return self.sessions / self.mean_session_s if self.sessions else 0.0

    @property
    def events_per_s(self) -> float:
        """About how many events a second the steady state produces."""
        return self.arrivals_per_s + self.sessions * 1000 / self.heartbeat_ms


def _weighted(rng: random.Random, table: Sequence[tuple[str, int]]) -> str:
    return rng.choices([name for name, _ in table], [w for _, w in table])[0]


def _overlap(incident: tuple[int, int] | None, begin: int, end: int) -> int:
    """Milliseconds of [begin, end) inside the incident's [start, end)."""
    if incident is None:
        return 0
    return max(0, min(end, incident[1]) - max(begin, incident[0]))


def session_events(cfg: GeneratorConfig, sid: int, join_ms: int) -> Iterator[Event]:
    """Every event of session ``sid`` joining at ``join_ms``, in time order (strictly
    increasing times)."""
    rng = random.Random((cfg.seed << 40) ^ sid)
    hb = cfg.heartbeat_ms
    customer = _weighted(rng, CUSTOMERS)
    content = f"{customer}/t{min(int(rng.paretovariate(1.2)) - 1, TITLES_PER_CUSTOMER - 1)}"
    cdn = _weighted(rng, CDNS)
    region = _weighted(rng, REGIONS)
    isp = rng.choice(ISPS[region])
    device = _weighted(rng, DEVICES)
    pool = cfg.viewers or max(1, 2 * cfg.sessions)
    viewer = int(pool * rng.random() ** 2)  # a skewed pool: low ids come back more often
    top = TOP_RUNG[device]
    yield (JOIN, join_ms, sid, viewer, customer, content, cdn, isp, device, region, LADDER[top])

    window: tuple[int, int] | None = None
    inc = cfg.incident
    if inc is not None and inc.cdn == cdn and inc.region == region:
        start = cfg.origin_ms + int(inc.start_s * 1000)
        window = (start, start + int(inc.length_s * 1000))
    hit_at_join = _overlap(window, join_ms, join_ms + 1) > 0

    fate = rng.random()
    p_fail = cfg.p_join_failure + (0.25 if hit_at_join else 0.0)
    if fate < p_fail:
        yield (ERROR, join_ms + rng.randint(300, 4000), sid, rng.choice(JOIN_ERRORS))
        return
    if fate < p_fail + cfg.p_exit_before_start:
        yield (EXIT, join_ms + rng.randint(200, hb - 1), sid, 1)
        return
    startup = int(rng.lognormvariate(math.log(900), 0.6)) * (3 if hit_at_join else 1)
    startup = min(max(startup, 150), hb - 100)
    length = rng.lognormvariate(math.log(cfg.median_session_s * 1000), cfg.session_sigma)
    length_ms = int(min(max(length, hb), cfg.max_session_s * 1000))
    end = join_ms + startup + length_ms
    ending = rng.random()

    previous, k = join_ms, 1
    while (beat := join_ms + k * hb) < end:
        hit = _overlap(window, previous, beat)
        if k == 1:
            buffering = startup
        else:
            buffering = rng.randint(300, 3000) if rng.random() < cfg.p_rebuffer else 0
            if hit:
                buffering += int(hit * rng.uniform(0.3, 0.7))
            buffering = min(buffering, hb)
        rung = top - (rng.random() < 0.1) - (2 if hit else 0)
        dropped = (rng.randint(1, 4) if rng.random() < 0.2 else 0) + hit // 200
        yield (HEARTBEAT, beat, sid, LADDER[max(rung, 0)], buffering, hb - buffering, dropped)
        if hit and rng.random() < 0.15:  # the viewer gives up while it buffers
            yield (EXIT, beat + rng.randint(1, hb - 1), sid, 1)
            return
        previous, k = beat, k + 1
    if ending < cfg.p_silent:
        return  # the player stops reporting: no exit
    if ending < cfg.p_silent + cfg.p_playback_failure:
        yield (ERROR, end, sid, rng.choice(PLAYBACK_ERRORS))
        return
    buffering_now = rng.random() < (0.6 if _overlap(window, end - hb, end) else 0.04)
    yield (EXIT, end, sid, int(buffering_now))


class EventGenerator:
    """The events of consecutive slices, deterministic for a config.

    >>> gen = EventGenerator(GeneratorConfig(seed=7, sessions=100))
    >>> first, second = gen.next_slice(), gen.next_slice()  # slices 0 and 1
    """

    def __init__(self, cfg: GeneratorConfig) -> None:
        self.cfg = cfg
        self.index = 0  # the next slice
        self._arrivals = random.Random(cfg.seed)
        self._next_sid = 0
        self._next_poisson = float(cfg.origin_ms) + self._gap()
        burst_ms = int(cfg.burst_s * 1000)
        self._burst = sorted(
            cfg.origin_ms + self._arrivals.randrange(burst_ms)
            for _ in range(cfg.sessions if burst_ms > 0 else 0)
        )
        self._burst_at = 0
        self._pending: list[tuple[int, int, Event, Iterator[Event]]] = []

    def _gap(self) -> float:
        rate = self.cfg.arrivals_per_s
        return self._arrivals.expovariate(rate / 1000) if rate > 0 else math.inf

    def _next_arrival(self) -> float:
        burst = self._burst[self._burst_at] if self._burst_at < len(self._burst) else math.inf
        return min(burst, self._next_poisson)

    def _push(self, events: Iterator[Event]) -> None:
        event = next(events, None)
        if event is not None:
            heapq.heappush(self._pending, (event[1], event[2], event, events))

    def next_slice(self) -> list[Event]:
        """The events of slice ``self.index`` (then the index moves on)."""
        end = self.cfg.origin_ms + (self.index + 1) * self.cfg.slice_ms
        while (at := self._next_arrival()) < end:
            if self._burst_at < len(self._burst) and self._burst[self._burst_at] == at:
                self._burst_at += 1
            else:
                self._next_poisson += self._gap()
            self._push(session_events(self.cfg, self._next_sid, int(at)))
            self._next_sid += 1
        out = []
        while self._pending and self._pending[0][0] < end:
            _, _, event, rest = heapq.heappop(self._pending)
            out.append(event)
            self._push(rest)
        self.index += 1
        return out

    def slices(self, n: int) -> list[list[Event]]:
        """The next ``n`` slices."""
        return [self.next_slice() for _ in range(n)]


def slice_file_name(index: int) -> str:
    return f"events-{index:08d}.tsv"


def write_slice(
    directory: str | os.PathLike[str], index: int, events: list[Event], mtime_ms: int
) -> Path:
    """Write one slice into ``directory`` atomically: under a hidden name (which file streams
    skip), with its modification time set to ``mtime_ms``, then renamed into place."""
    final = Path(directory) / slice_file_name(index)
    hidden = final.with_name(f".{final.name}.tmp")
    with open(hidden, "w") as f:
        f.writelines(format_event(e) + "\n" for e in events)
    os.utime(hidden, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    os.replace(hidden, final)
    return final


def write_slices(
    directory: str | os.PathLike[str], cfg: GeneratorConfig, n: int
) -> list[list[Event]]:
    """Write slices 0..n-1 now (for replay and tests); returns their events."""
    gen = EventGenerator(cfg)
    written = []
    for k in range(n):
        events = gen.next_slice()
        write_slice(directory, k, events, cfg.origin_ms + k * cfg.slice_ms)
        written.append(events)
    return written


class LiveWriter(threading.Thread):
    """Writes slice k as soon as the wall clock reaches its start (origin + k*slice), so a
    file stream started at or before the origin reads slice k in the interval ending at
    origin + (k+1)*slice. Stops after ``slices`` slices or on :meth:`stop`."""

    def __init__(self, directory: str, cfg: GeneratorConfig, slices: int | None = None) -> None:
        super().__init__(name="video-generator", daemon=True)
        self.directory, self.cfg, self.limit = directory, cfg, slices
        self.generator = EventGenerator(cfg)
        self.written = 0
        self.events = 0
        self._stopped = threading.Event()

    def run(self) -> None:
        while self.limit is None or self.written < self.limit:
            k = self.generator.index
            start = self.cfg.origin_ms + k * self.cfg.slice_ms
            if self._stopped.wait(max(0.0, start / 1000 - time.time())):
                return
            events = self.generator.next_slice()
            write_slice(self.directory, k, events, start)
            self.written += 1
            self.events += len(events)

    def stop(self) -> None:
        self._stopped.set()
        if self.is_alive():
            self.join()


def config_from_args(args: argparse.Namespace) -> GeneratorConfig:
    incident = (
        Incident(args.incident_cdn, args.incident_region, args.incident_at, args.incident_for)
        if args.incident_for > 0
        else None
    )
    return GeneratorConfig(
        seed=args.seed,
        origin_ms=args.origin_ms,
        slice_ms=args.slice_ms,
        sessions=args.sessions,
        median_session_s=args.median_session_s,
        heartbeat_ms=args.heartbeat_ms,
        incident=incident,
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The generator's options (shared with apps/video_monitor.py)."""
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--sessions", type=int, default=5000, help="sessions alive on average")
    p.add_argument("--median-session-s", type=float, default=60.0)
    p.add_argument("--heartbeat-ms", type=int, default=5000)
    p.add_argument("--incident-cdn", default="level3")
    p.add_argument("--incident-region", default="eu-west")
    p.add_argument("--incident-at", type=float, default=25.0, help="seconds after the start")
    p.add_argument("--incident-for", type=float, default=20.0, help="seconds; 0: no incident")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("directory")
    p.add_argument("--seconds", type=float, default=60.0, help="event time to generate")
    p.add_argument("--slice-ms", type=int, default=1000, help="one file per slice")
    p.add_argument(
        "--origin-ms",
        type=int,
        default=None,
        help="event time of slice 0 (default: the next whole slice of the wall clock)",
    )
    p.add_argument("--live", action="store_true", help="write each slice when its time comes")
    add_arguments(p)
    args = p.parse_args(argv)
    if args.origin_ms is None:
        args.origin_ms = (int(time.time() * 1000) // args.slice_ms + 1) * args.slice_ms
    os.makedirs(args.directory, exist_ok=True)
    cfg = config_from_args(args)
    n = math.ceil(args.seconds * 1000 / cfg.slice_ms)
    if args.live:
        writer = LiveWriter(args.directory, cfg, n)
        writer.start()
        writer.join()
        events = writer.events
    else:
        events = sum(len(s) for s in write_slices(args.directory, cfg, n))
    print(f"wrote {n} slices, {events} events, origin {cfg.origin_ms} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
