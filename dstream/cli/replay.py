"""``dstream replay APP.py --from T --to T``: an unchanged program over existing input (see
:mod:`dstream.scheduler.replay_clock`). The program runs on its own thread on the replay's clock;
this thread moves the clock through the intervals and then stops the program gracefully."""

from __future__ import annotations

import contextvars
import json

from dstream.cli.program import Program, ProgramError
from dstream.clock import programs_use
from dstream.scheduler.replay_clock import ReplayPlan

__all__ = ["run_replay"]


def run_replay(app: str, args: list[str], begin: str, end: str, speed: str) -> int:
    try:
        plan = ReplayPlan.of(begin, end, speed, ("--from", "--to"))
    except ValueError as exc:
        raise SystemExit(f"dstream replay: {exc}") from None
    with programs_use(plan.clock):
        context = contextvars.copy_context()  # the program's thread sees the replay clock
    program = Program(app, args, "replay")
    program.start(context)
    try:
        ssc = program.wait_for_context()
    except ProgramError:
        if program.error is None:  # ended without starting a StreamingContext
            raise
        return program.exit_status()
    try:
        plan.check(ssc)
    except ValueError as exc:
        ssc.stop(stopSparkContext=True)
        raise SystemExit(f"dstream replay: {app}: {exc}") from None
    try:
        report = plan.drive(ssc)
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
    return program.exit_status()
