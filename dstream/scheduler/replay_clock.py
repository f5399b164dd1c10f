"""Replay: the same program over input that already exists (the paper's Sec. 3.5).

A replayed program is the live one, unchanged, on a clock that the replay moves: it starts
at ``begin`` and goes to the end of the next interval as soon as the previous one completed
(``speed="max"``: replay is bounded by the cluster, not by the interval length) or at a
multiple of real time (``"1x"``, ``"10x"``). Everything else is the live code path: a file
goes to the interval its modification time falls in, by the file source's own rule, and
outputs are committed exactly as live, so a replay of the files a live run read commits the
same outputs, interval by interval.

The program gets the clock without being told: a StreamingContext created without a clock
while the replay sets up the program runs on the replay's clock
(:func:`dstream.clock.programs_use`).
"""

from __future__ import annotations

import re
import threading
import time as _time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dstream.clock import ManualClock, SystemClock, programs_use
from dstream.listener import StreamingListener
from dstream.scheduler.engine import engine_of
from dstream.scheduler.stretch import ReplayStretch
from dstream.time import Time
from dstream.timetext import parse_when

if TYPE_CHECKING:
    from dstream.context import StreamingContext

__all__ = ["ReplayPlan", "ReplayReport", "drive", "parse_speed", "replay"]

_SPEED = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*x\s*$")


@dataclass(frozen=True)
class ReplayReport:
    """What a replay ran: its intervals (``first`` to ``last``), the input records they
    read, how long it took, and how many of its intervals were computed in stretches of
    many intervals per job (``stretched``; see :mod:`dstream.scheduler.stretch`)."""

    first: Time
    last: Time
    intervals: int
    records: int
    seconds: float
    stretched: int = 0

    @property
    def records_per_second(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0


def parse_speed(speed: object) -> float | None:
    """``"max"`` -> None (as fast as intervals complete); ``"1x"``, ``"2.5x"`` -> a factor
    of real time."""
    if speed == "max":
        return None
    match = _SPEED.match(speed) if isinstance(speed, str) else None
    if match is None or float(match.group(1)) <= 0:
        raise ValueError(
            f"replay speed {speed!r} must be 'max' (as fast as the cluster completes "
            "intervals) or a positive multiple of real time such as '1x' or '10x'"
        )
    return float(match.group(1))


class _Records(StreamingListener):
    def __init__(self) -> None:
        self.records = 0

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        self.records += batchCompleted.batchInfo().numRecords()


def drive(
    ssc: StreamingContext, clock: ManualClock, end: Time, speed: float | None
) -> ReplayReport:
    """Move ``clock`` (which ``ssc`` runs on, already started) through every interval up to
    ``end``, and wait for the last one."""
    counter = _Records()
    ssc.addStreamingListener(counter)
    engine = engine_of(ssc)
    batch = engine.batch_duration
    first = clock.now().floor(batch) + batch
    last = end.floor(batch) if end.floor(batch) >= first else first
    graph = engine.graph
    stretch = ReplayStretch.of(graph, last) if speed is None else None
    graph.stretch = stretch  # before the first interval is generated
    began = _time.perf_counter()
    pause = threading.Event()
    t = first
    try:
        while t <= last:
            clock.set_time(t)
            if speed is None:
                if not ssc.wait_for_batch(t, None):
                    break
            else:
                pause.wait(batch.total_seconds() / speed)
            t = t + batch
        ssc.wait_for_batch(last, None)
    finally:
        graph.stretch = None
    seconds = _time.perf_counter() - began
    engine.bus.wait_until_empty(60)
    intervals = (last.ms - first.ms) // batch.ms + 1
    stretched = 0 if stretch is None else stretch.stretched
    return ReplayReport(first, last, intervals, counter.records, seconds, stretched)


@dataclass(frozen=True)
class ReplayPlan:
    """A replay's clock (at ``begin``), where it stops, and its speed factor (None: max)."""

    clock: ManualClock
    end: Time
    speed: float | None

    @classmethod
    def of(cls, begin: object, end: object, speed: object, names: tuple[str, str]) -> ReplayPlan:
        factor = parse_speed(speed)
        now = SystemClock().now()
        start, stop = parse_when(begin, now, names[0]), parse_when(end, now, names[1])
        if stop < start:
            raise ValueError(
                f"replay {names[1]} {stop} is before its {names[0]} {start}; give the earlier first"
            )
        return cls(ManualClock(start), stop, factor)

    def check(self, ssc: StreamingContext) -> None:
        if engine_of(ssc).clock is not self.clock:
            raise ValueError(
                "the replayed program set a clock of its own (clock=...); replay moves the "
                "program's clock itself: create the StreamingContext without one"
            )

    def drive(self, ssc: StreamingContext) -> ReplayReport:
        return drive(ssc, self.clock, self.end, self.speed)


def replay(
    setup: Callable[[], StreamingContext], begin: object, end: object, speed: object = "max"
) -> ReplayReport:
    """Run the program ``setup()`` defines over the intervals from ``begin`` to ``end`` (see
    the module docstring), then stop it gracefully."""
    plan = ReplayPlan.of(begin, end, speed, ("begin", "end"))
    with programs_use(plan.clock):
        ssc = setup()
    plan.check(ssc)
    ssc.start()
    try:
        return plan.drive(ssc)
    finally:
        ssc.stop(stopSparkContext=False, stopGraceFully=True)
