"""Traffic estimation on dstream: online EM over GPS observations, merged with past days
(the paper's Mobile Millennium port, Sec. 6.3.2; the model is in ``apps/traffic/``).

Every interval (5 s by default, as in the paper)::

    observations --window(120 s)--+-- weighted by age --+
    history (static RDD, cached)  +-- same time of day -+-- keyed by observation
                                                        |
      previous interval's estimates --join (by link)----+-- E-step per observation (tasks)
                                                        |
                      reduceByKey (per link, exact sums) +-- M-step per link --> fits
      ... repeated ``iterations`` times, each iteration joined with the last one's fits ...
                                                        |
      estimates = fits.updateStateByKey(keep the newest) --> saveAsTextFiles (exactly once)

The warm start is the estimates *state stream* itself: the EM transform of interval T reads
the state's RDD of T - 1 with ``slice`` (the estimates are only a few thousand links, but
we still ship to each observation only the parameters of its own links, by a join: the
Mobile Millennium papers' concern with large parameter vectors). Everything stays lineage:
an executor lost mid-run is recomputed, and the seeded E-step and fixed-point sums make the
recomputed estimates identical. The history is one RDD read once from the dataset's
``history/`` files, grouped by minute of the day and cached; each interval takes the
minutes of its window.

    python apps/traffic_em.py --data /tmp/traffic-data --seconds 60
    python apps/traffic_em.py --data DIR --batch-em 07:45     # the batch baseline, once

(the command line is in ``apps/traffic_cli.py``; this module is the program).

RDD records are strings and tuples only (observations travel as their text lines), so
executors need numpy but not the ``traffic`` package on their path: its functions are
shipped by value.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Iterable, Iterator
from functools import partial
from typing import Any

import traffic
from pyspark import RDD, SparkContext, StorageLevel, cloudpickle
from traffic.em import EMSettings, Params, Priors, observation_weight
from traffic.estep import SamplerSettings, Stats, add_stats, link_statistics
from traffic.mstep import fit_gamma
from traffic.network import City
from traffic.observations import Observation
from traffic.queries import RouteTime, SlowLink, route_time, slowest

from dstream import DStream, Duration, StreamingContext, Time

# Executors get the model and this program's functions by value (neither is installed).
cloudpickle.register_pickle_by_value(traffic)
if __name__ != "__main__":
    cloudpickle.register_pickle_by_value(sys.modules[__name__])

__all__ = [
    "LatestEstimates",
    "batch_estimates",
    "em_rdds",
    "estimates_stream",
    "load_history",
    "route_travel_time",
    "slowest_links",
]

MINUTE_MS = 60_000
log = logging.getLogger(__name__)
ESTEP_CHUNK = 200  # observations sampled together (numpy over all their chains)


# ---- one EM interval on RDDs (shared by the streaming and the batch programs) ----------------
def _key_and_weigh(line: str, now_ms: int, settings: EMSettings) -> tuple[str, tuple[str, float]]:
    obs = Observation.parse(line)
    return obs.id, (line, observation_weight(obs, now_ms, settings))


def _requests(
    record: tuple[str, tuple[str, float]], sampler: SamplerSettings
) -> list[tuple[int, str]]:
    oid, (line, _) = record
    obs = Observation.parse(line)
    return [(link, oid) for link in obs.links_used(sampler.exponent, sampler.min_share)]


def _reply(
    record: tuple[int, tuple[str, Params | None]], priors: Any
) -> tuple[str, tuple[int, Params]]:
    link, (oid, params) = record
    if params is None:
        shape, scales = priors.value
        params = (shape, scales[link])
    return oid, (link, params)


def _estep(
    records: Iterable[tuple[str, tuple[Iterable[tuple[str, float]], Iterable[tuple[int, Params]]]]],
    now_ms: int,
    iteration: int,
    sampler: SamplerSettings,
    link_half_life_ms: int | None,
) -> Iterator[tuple[int, Stats]]:
    batch: list[tuple[Observation, float]] = []
    params: dict[int, Params] = {}
    for _, (mine, replies) in records:
        for line, w in mine:
            batch.append((Observation.parse(line), w))
        params.update(replies)
        if len(batch) >= ESTEP_CHUNK:
            yield from link_statistics(batch, params, now_ms, iteration, sampler, link_half_life_ms)
            batch, params = [], {}
    if batch:
        yield from link_statistics(batch, params, now_ms, iteration, sampler, link_half_life_ms)


def _mstep(
    records: Iterable[tuple[int, Stats]], priors: Any, settings: EMSettings
) -> Iterator[tuple[int, Params]]:
    shape, scales = priors.value
    for link, stats in records:
        fit = fit_gamma(
            stats,
            (shape, scales[link]),
            settings.prior_strength,
            settings.min_shape,
            settings.max_shape,
        )
        yield link, fit


def em_rdds(
    data: RDD[tuple[str, tuple[str, float]]],
    params: RDD[tuple[int, Params]],
    now_ms: int,
    priors: Any,
    settings: EMSettings,
    iterations: int,
    partitions: int,
) -> RDD[tuple[int, Params]]:
    """EM iterations over ``(observation id, (line, weight))`` records starting from
    ``params`` (links without: their prior, from the broadcast ``priors``): the new
    ``(link, (k, theta))`` of every link the last iteration's E-step split a duration over,
    partitioned by link. A link without statistics in an iteration (its candidate paths
    lost their weight) keeps its estimate for the next one, as in ``traffic.em``."""
    keyed = data.filter(lambda r: r[1][1] > 0).partitionBy(partitions)
    current = params
    for it in range(iterations):
        requests = keyed.flatMap(partial(_requests, sampler=settings.sampler)).partitionBy(
            partitions
        )
        replies = (
            requests.leftOuterJoin(current, partitions)
            .map(partial(_reply, priors=priors))
            .partitionBy(partitions)
        )
        stats = keyed.cogroup(replies, partitions).mapPartitions(
            partial(
                _estep,
                now_ms=now_ms,
                iteration=it,
                sampler=settings.sampler,
                link_half_life_ms=settings.link_half_life_ms,
            )
        )
        fits = stats.reduceByKey(add_stats, partitions).mapPartitions(
            partial(_mstep, priors=priors, settings=settings), preservesPartitioning=True
        )
        if it == iterations - 1:
            return fits
        current = current.cogroup(fits, partitions).mapValues(_newest_fit)
    return current


def _newest_fit(pair: tuple[Iterable[Params], Iterable[Params]]) -> Params:
    """An iteration's fit of a link, or the estimate it started from when it has none."""
    before, fit = (list(side) for side in pair)
    return fit[0] if fit else before[0]


# ---- history: read once, kept by minute of the day --------------------------------------------
def _by_minute(line: str) -> tuple[int, str]:
    return int(line.split("|", 3)[2]) // MINUTE_MS, line


def load_history(sc: SparkContext, directory: str, days: int) -> RDD[tuple[int, tuple[str, ...]]]:
    """The past days' observations (``day-NN.txt`` files, NN <= ``days``) as one cached RDD
    of ``(minute of the day, lines)``, materialised now."""
    paths = [os.path.join(directory, f"day-{d:02d}.txt") for d in range(1, days + 1)]
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        raise FileNotFoundError(
            f"history files {missing[:3]} do not exist: generate {days} days of history "
            "(traffic.generate --days) or lower --history-days"
        )
    history = (
        sc.textFile(",".join(paths))
        .filter(lambda line: bool(line.strip()))
        .map(_by_minute)
        .groupByKey()
        .mapValues(tuple)
        .persist(StorageLevel.MEMORY_AND_DISK)
    )
    history.count()
    return history


def _history_window(
    record: tuple[int, tuple[str, ...]], now_ms: int, settings: EMSettings
) -> Iterator[tuple[str, tuple[str, float]]]:
    minute, lines = record
    lo = now_ms - settings.window_ms
    if (minute + 1) * MINUTE_MS <= lo or minute * MINUTE_MS > now_ms:
        return
    for line in lines:
        _, day, t_end, _ = line.split("|", 3)
        if lo < int(t_end) <= now_ms and int(day) <= settings.history_days:
            yield _key_and_weigh(line, now_ms, settings)


# ---- the streaming program --------------------------------------------------------------------
def _newest(new: list[Params], old: Params | None) -> Params | None:
    return new[-1] if new else old


class IntervalClock:
    """The data's time of day of a stream interval, when interval times are the wall clock's
    and the data's are another day's: the first interval the program runs holds the data's
    first interval (``first_tod_ms``, where a queue of replayed intervals starts), and each
    later one is that much later. Taken from the interval that actually ran, not from the
    clock read before ``start()``, so a setup that crosses an interval boundary shifts
    nothing (labels, history windows and sampler seeds): reruns of the same input agree."""

    def __init__(self, first_tod_ms: int) -> None:
        self.first_tod_ms = first_tod_ms
        self._first: Time | None = None  # set by the first interval (the scheduler's thread)

    def tod_ms(self, t: Time) -> int:
        if self._first is None:
            self._first = t
        return self.first_tod_ms + (t.ms - self._first.ms)


def estimates_stream(
    ssc: StreamingContext,
    lines: DStream[str],
    priors: Priors,
    settings: EMSettings,
    *,
    batch_ms: int,
    history: RDD[tuple[int, tuple[str, ...]]] | None = None,
    partitions: int = 4,
    clock: IntervalClock | None = None,
) -> DStream[tuple[int, Params]]:
    """The per-link estimates, every interval: ``(link, (k, theta))`` of every link ever
    estimated. ``lines`` are today's observations in their text format, ``batch_ms`` the
    context's batch interval; interval ``T`` is the time of day ``T``, or with ``clock`` the
    time of day ``clock`` gives it (counted from the first interval run)."""
    sc = ssc.sparkContext
    prior_table = sc.broadcast((priors.shape, priors.scale))
    if settings.window_ms % batch_ms:
        raise ValueError(
            f"the EM window {settings.window_ms} ms must be a multiple of the batch interval "
            f"{batch_ms} ms"
        )
    holder: list[DStream[tuple[int, Params]]] = []
    first: list[Time] = []

    def interval(t: Time, live: RDD[str]) -> RDD[tuple[int, Params]]:
        first[:] = first or [t]
        now = t.ms if clock is None else clock.tod_ms(t)
        data = live.map(partial(_key_and_weigh, now_ms=now, settings=settings))
        if history is not None and settings.history_days > 0:
            ahead = now + settings.history_lead_ms
            past = history.flatMap(partial(_history_window, now_ms=ahead, settings=settings))
            data = data.union(past)
        previous = holder[0].slice(Time(t.ms - batch_ms), Time(t.ms - batch_ms))
        if not previous and t != first[0]:
            log.warning("no estimates of the interval before %s: EM restarts from the priors", t)
        params = previous[0] if previous else sc.emptyRDD().partitionBy(partitions)
        return em_rdds(data, params, now, prior_table, settings, settings.iterations, partitions)

    window = lines.window(Duration(settings.window_ms), Duration(batch_ms))
    estimates = window.transform(interval).updateStateByKey(_newest, numPartitions=partitions)
    estimates.setName("traffic-estimates").remember(Duration(2 * batch_ms))
    holder.append(estimates)
    return estimates


def batch_estimates(
    sc: SparkContext,
    lines: RDD[str],
    now_ms: int,
    priors: Priors,
    settings: EMSettings,
    window_ms: int = 30 * MINUTE_MS,
    iterations: int = 10,
    partitions: int = 4,
) -> RDD[tuple[int, Params]]:
    """The batch baseline on Spark: EM from the priors over today's observations of the
    ``window_ms`` before ``now_ms``, unweighted (what :func:`traffic.em.batch_em` computes)."""
    prior_table = sc.broadcast((priors.shape, priors.scale))

    def in_window(line: str) -> bool:
        return now_ms - window_ms < int(line.split("|", 3)[2]) <= now_ms

    data = lines.filter(in_window).map(lambda line: (line.split("|", 1)[0], (line, 1.0)))
    empty = sc.emptyRDD().partitionBy(partitions)
    return em_rdds(data, empty, now_ms, prior_table, settings, iterations, partitions)


def format_estimate(record: tuple[int, Params]) -> str:
    link, (k, theta) = record
    return f"{link}|{k!r}|{theta!r}|{k * theta!r}"


# ---- what the shell asks ------------------------------------------------------------------------
def slowest_links(estimates: RDD[tuple[int, Params]], city: City, n: int = 10) -> list[SlowLink]:
    """The ``n`` links with the lowest estimated speed now (one pass over the estimates)."""
    length, limit = city.length_m.tolist(), city.speed_limit_mps.tolist()

    def local(items: Iterable[tuple[int, Params]]) -> list[list[SlowLink]]:
        return [slowest(items, length, limit, n)]

    found = [s for part in estimates.mapPartitions(local).collect() for s in part]
    return sorted(found, key=lambda s: (s.speed_kmh, s.link))[:n]


def route_travel_time(
    estimates: RDD[tuple[int, Params]], city: City, links: list[int], priors: Priors
) -> RouteTime:
    """Mean and spread of the travel time of a route (its links in order) right now."""
    wanted = set(links)
    found = dict(estimates.filter(lambda kv: kv[0] in wanted).collect())
    return route_time(links, found, priors)


class LatestEstimates:
    """The estimates RDD of the latest completed interval, for queries from the shell."""

    def __init__(self, estimates: DStream[tuple[int, Params]]) -> None:
        self._lock = threading.Lock()
        self._first = threading.Event()
        self.time: Time | None = None
        self._rdd: RDD[tuple[int, Params]] | None = None
        estimates.foreachRDD(self._update)

    def _update(self, time: Time, rdd: RDD[tuple[int, Params]]) -> None:
        with self._lock:
            self.time, self._rdd = time, rdd
        self._first.set()

    def wait(self, timeout_s: float) -> bool:
        """Until a first interval has completed (False if none did within ``timeout_s``)."""
        return self._first.wait(timeout_s)

    def rdd(self) -> RDD[tuple[int, Params]]:
        with self._lock:
            if self._rdd is None:
                raise RuntimeError("no interval has completed yet: wait for the first batch")
            return self._rdd


if __name__ == "__main__":
    from traffic_cli import main

    sys.exit(main())
