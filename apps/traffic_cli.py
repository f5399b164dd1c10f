"""The command line of the traffic-estimation program (``apps/traffic_em.py``): replay a
generated city's day as a stream, print a summary every interval, answer the shell's
questions at the end; or run the batch baseline once.

    python apps/traffic_em.py --data /tmp/city --seconds 60
    python apps/traffic_em.py --data /tmp/city --batch-em 07:45
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass

from pyspark import RDD, cloudpickle
from traffic.em import EMSettings, Params, Priors
from traffic.estep import SamplerSettings
from traffic.generate import intervals, load_city, read_observations
from traffic.network import City
from traffic.queries import RouteTime, SlowLink, slowest
from traffic_em import (
    MINUTE_MS,
    IntervalClock,
    LatestEstimates,
    batch_estimates,
    estimates_stream,
    format_estimate,
    load_history,
    route_travel_time,
    slowest_links,
)

from dstream import StreamingContext, Time
from dstream.time import to_duration

__all__ = ["App", "launch", "main"]

if __name__ != "__main__":
    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # its summary runs on executors


@dataclass
class App:
    """A running program: its context, city, priors, and the latest estimates."""

    ssc: StreamingContext
    city: City
    priors: Priors
    latest: LatestEstimates

    def slowest(self, n: int = 10) -> list[SlowLink]:
        return slowest_links(self.latest.rdd(), self.city, n)

    def route(self, origin: int, destination: int) -> RouteTime:
        """Travel time now between two intersections, on the drivers' usual route."""
        return route_travel_time(
            self.latest.rdd(), self.city, self.city.route(origin, destination), self.priors
        )

    def stop(self) -> None:
        # Not gracefully: when the EM is behind (it is CPU-bound), draining the intervals
        # already generated would take long; saveAsTextFiles commits whole intervals only.
        self.ssc.stop(stopSparkContext=True, stopGraceFully=False)


def settings_from(args: argparse.Namespace) -> EMSettings:
    return EMSettings(
        sampler=SamplerSettings(samples=args.samples, chains=args.chains, burn_in=args.burn_in),
        iterations=args.iterations,
        window_ms=_ms(args.window),
        half_life_ms=_ms(args.window) // 2,
        history_days=args.history_days,
        link_timing=args.link_timing,
        history_lead_ms=0
        if args.history_lead is None
        else _ms(args.history_lead, "--history-lead"),
    )


def _ms(text: str, flag: str = "--window") -> int:
    return to_duration(text, flag).ms


def _clock(text: str) -> int:
    hours, sep, minutes = text.partition(":")
    if not sep or not hours.isdigit() or not minutes.isdigit():
        raise SystemExit(f"time of day {text!r} is not HH:MM, e.g. 07:30")
    return (int(hours) * 60 + int(minutes)) * MINUTE_MS


def parser() -> argparse.ArgumentParser:
    import traffic_em

    p = argparse.ArgumentParser(
        description=traffic_em.__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--data", required=True, help="a dataset from traffic.generate")
    p.add_argument("--output", help="where estimates-<ms> directories go (default: a temp dir)")
    p.add_argument("--seconds", type=float, default=60.0, help="how long to run")
    p.add_argument("--batch", default="5s", help="the interval (the paper: 5 s)")
    p.add_argument("--window", default="120s", help="the live window (half-life: half of it)")
    p.add_argument("--start", help="time of day of the first interval (HH:MM; default: data start)")
    p.add_argument("--samples", type=int, default=300, help="E-step samples per observation")
    p.add_argument("--chains", type=int, default=30, help="Gibbs chains per observation")
    p.add_argument("--burn-in", type=int, default=5, help="Gibbs sweeps before sampling")
    p.add_argument("--iterations", type=int, default=2, help="EM iterations per interval")
    p.add_argument("--history-days", type=int, default=10)
    p.add_argument(
        "--link-timing",
        action="store_true",
        help="weigh each link by the age of its own traversal, not of the second fix",
    )
    p.add_argument(
        "--history-lead",
        help="the past days' window ends this long after now (e.g. 60s; default: at now): "
        "their traversals centre nearer now than today's can",
    )
    p.add_argument("--partitions", type=int, default=4, help="2-3 per core")
    p.add_argument("--batch-em", metavar="HH:MM", help="run the batch baseline once, ending then")
    p.add_argument("--checkpoint", help="checkpoint directory (needed on a cluster)")
    # Environment variables are read here, at the command-line edge, and nowhere else.
    p.add_argument("--master", default=os.environ.get("DSTREAM_MASTER", "local[2]"))
    p.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--quiet", action="store_true", help="no summary every interval")
    return p


def launch(argv: list[str] | None = None) -> App:
    """Start the streaming program in the background (``python -i`` or a notebook):
    ``app = launch([...]); app.slowest(5); app.route(0, 783); app.stop()``."""
    from _cli import spark

    args = parser().parse_args(argv)
    settings = settings_from(args)
    city, traffic_config = load_city(args.data)
    priors = Priors(city, settings)
    sc = spark(args, "dstream-traffic")
    ssc = StreamingContext(sc, args.batch)
    if args.checkpoint:
        ssc.checkpoint(args.checkpoint)
    batch_ms = to_duration(args.batch, "--batch").ms
    start_tod = _clock(args.start) if args.start else traffic_config.start_ms + settings.window_ms
    # The replay starts a window before start_tod, so that the first estimates there have
    # a full window behind them.
    today = read_observations(os.path.join(args.data, "today.txt"))
    replay = [
        (t, [o.format() for o in obs])
        for t, obs in intervals(today, batch_ms)
        if t > start_tod - settings.window_ms
    ]
    if not replay:
        raise SystemExit(f"{args.data}/today.txt has no observation after --start {args.start}")
    # Interval k of the stream holds replay[k]: the data's time of day of an interval is
    # counted from the first interval actually run (not from the clock read here, before a
    # setup that may cross an interval boundary).
    clock = IntervalClock(replay[0][0])
    lines = ssc.queueStream([batch for _, batch in replay], default=[])
    history = None
    if settings.history_days > 0:
        history = load_history(sc, os.path.join(args.data, "history"), settings.history_days)
    estimates = estimates_stream(
        ssc,
        lines,
        priors,
        settings,
        batch_ms=batch_ms,
        history=history,
        partitions=args.partitions,
        clock=clock,
    )
    output = args.output or tempfile.mkdtemp(prefix="traffic-estimates-")
    estimates.map(format_estimate).saveAsTextFiles(os.path.join(output, "estimates"))
    latest = LatestEstimates(estimates)
    if not args.quiet:
        estimates.foreachRDD(_summary(city, clock))
    print(f"estimates every {args.batch} to {output}", flush=True)
    ssc.start()
    return App(ssc, city, priors, latest)


def _summary(city: City, clock: IntervalClock) -> Callable[[Time, RDD[tuple[int, Params]]], None]:
    corridor = city.corridor.tolist()
    length = city.length_m.tolist()

    def show(t: Time, rdd: RDD[tuple[int, Params]]) -> None:
        def speeds(kv: tuple[int, Params]) -> tuple[int, float, int, float]:
            link, (k, theta) = kv
            v = 3.6 * length[link] / (k * theta)
            return (1, v, 0, 0.0) if corridor[link] else (0, 0.0, 1, v)

        total = rdd.map(speeds).fold((0, 0.0, 0, 0.0), _add4)
        slow = slowest_links(rdd, city, 3)
        corridors = f"{total[1] / total[0]:.0f}" if total[0] else "-"
        others = f"{total[3] / total[2]:.0f}" if total[2] else "-"
        worst = ", ".join(f"link {s.link} {s.speed_kmh:.0f} km/h" for s in slow)
        tod = clock.tod_ms(t) // 1000
        shown = f"{tod // 3600:02d}:{tod // 60 % 60:02d}:{tod % 60:02d}"
        print(
            f"[{shown}] {total[0] + total[2]} links estimated; mean speed "
            f"on corridors {corridors} km/h, elsewhere {others} km/h; slowest: {worst}",
            flush=True,
        )

    return show


def _add4(
    a: tuple[int, float, int, float], b: tuple[int, float, int, float]
) -> tuple[int, float, int, float]:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3])


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.batch_em:
        return run_batch(args)
    app = launch(argv)
    try:
        app.ssc.awaitTerminationOrTimeout(args.seconds)
        # The EM is CPU-bound: on a busy machine the first interval may take longer than
        # --seconds. Answer from it anyway (up to 10 more minutes) rather than say nothing,
        # once every output of that interval is done: its estimates come to `latest` first,
        # and stopping then cut off its summary line and its saved files (a fresh-clone run
        # printed no interval at all).
        if app.latest.wait(600) and app.latest.time is not None:
            app.ssc.wait_for_batch(app.latest.time, 600)
            print("slowest links now:", flush=True)
            for s in app.slowest(5):
                print(
                    f"    link {s.link}: {s.speed_kmh:.1f} km/h (limit {s.limit_kmh:.0f}), "
                    f"mean {s.mean_s:.1f} s",
                    flush=True,
                )
            trip = app.route(0, app.city.n_nodes - 1)
            print(
                f"corner to corner ({trip.links} links): {trip.mean_s / 60:.1f} min "
                f"+- {trip.sd_s / 60:.1f}",
                flush=True,
            )
    finally:
        app.stop()
    print("stopped cleanly", flush=True)
    return 0


def run_batch(args: argparse.Namespace) -> int:
    from _cli import spark

    settings = settings_from(args)
    city, _ = load_city(args.data)
    priors = Priors(city, settings)
    sc = spark(args, "dstream-traffic-batch")
    try:
        began = time.monotonic()
        now = _clock(args.batch_em)
        lines = sc.textFile(os.path.join(args.data, "today.txt"))
        fits = batch_estimates(sc, lines, now, priors, settings, partitions=args.partitions)
        result = dict(fits.collect())
        print(
            f"batch EM over the 30 minutes to {args.batch_em}: {len(result)} links estimated "
            f"in {time.monotonic() - began:.1f} s",
            flush=True,
        )
        for s in slowest(result.items(), city.length_m.tolist(), city.speed_limit_mps.tolist(), 5):
            print(
                f"    link {s.link}: {s.speed_kmh:.1f} km/h (limit {s.limit_kmh:.0f})", flush=True
            )
    finally:
        sc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
