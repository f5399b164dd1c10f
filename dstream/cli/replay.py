"""``dstream replay APP.py --from T --to T``: an unchanged program over existing input (see
:mod:`dstream.scheduler.replay`). The program runs on its own thread on the replay's clock;
this thread moves the clock through the intervals and then stops the program gracefully."""

from __future__ import annotations

import contextvars
import json

from dstream.cli.program import Program
from dstream.clock import ManualClock, SystemClock, programs_use
from dstream.scheduler.replay import drive, parse_speed
from dstream.timetext import parse_when

__all__ = ["run_replay"]


def run_replay(app: str, args: list[str], begin: str, end: str, speed: str) -> int:
    factor = parse_speed(speed)
    now = SystemClock().now()
    start, stop = parse_when(begin, now, "--from"), parse_when(end, now, "--to")
    if stop < start:
        raise SystemExit(f"dstream replay: --to {stop} is before --from {start}")
    clock = ManualClock(start)
    with programs_use(clock):
        context = contextvars.copy_context()  # the program's thread sees the replay clock
    program = Program(app, args)
    program.start(context)
    ssc = program.wait_for_context()
    if ssc._clock is not clock:
        raise SystemExit(
            f"dstream replay: {app} gives its StreamingContext a clock of its own; replay "
            "needs to move the program's clock: create the StreamingContext without clock="
        )
    try:
        report = drive(ssc, clock, stop, factor)
    finally:
        ssc.stop(stopSparkContext=True, stopGraceFully=True)
        program.join(120)
    print(
        json.dumps(
            {
                "first": str(report.first),
                "last": str(report.last),
                "intervals": report.intervals,
                "records": report.records,
                "seconds": round(report.seconds, 3),
                "records_per_second": round(report.records_per_second, 1),
            }
        ),
        flush=True,
    )
    return 1 if program.error is not None else 0
