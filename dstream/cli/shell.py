"""``python -m dstream shell APP.py [ARGS]``: the program runs, and a console opens beside it
in the same driver, with the program's live state in reach::

    ssc, sc, spark       the StreamingContext, its SparkContext, a SparkSession on it
    <name>               every stream named with stream.setName("<name>")
    streams              all named streams, by name
    Time, Duration       for times and lengths

Queries (``latest()``, ``at()``, ``slice()``, ``snapshot()``, ``lookup()``, ``toDF()``,
``createOrReplaceTempView()``) read completed intervals while the program runs on. IPython is
used when it is installed, Python's own console otherwise. Ctrl-D (or ``exit()``) stops the
program gracefully: the intervals already generated finish and their outputs are committed.

In a program run with ``python -i``, in IPython or in Jupyter, ``namespace(ssc)`` gives the
same names.
"""

from __future__ import annotations

import code
from typing import TYPE_CHECKING, Any

from dstream.cli.program import Program, ProgramError
from dstream.dstream import handle_for
from dstream.jvm import session_of
from dstream.scheduler.engine import engine_of

if TYPE_CHECKING:
    from dstream.context import StreamingContext

__all__ = ["namespace", "run_shell"]


def namespace(ssc: StreamingContext) -> dict[str, Any]:
    """The names the shell puts in scope for ``ssc``'s program."""

    from dstream.time import Duration, Time

    sc = ssc.sparkContext
    streams = {s.user_name: handle_for(s) for s in engine_of(ssc).graph.streams if s.user_name}
    names: dict[str, Any] = {
        "ssc": ssc,
        "sc": sc,
        "spark": session_of(sc),
        "streams": streams,
        "Time": Time,
        "Duration": Duration,
    }
    names.update({n: s for n, s in streams.items() if n.isidentifier() and n not in names})
    return names


def _banner(app: str, names: dict[str, Any]) -> str:
    streams = ", ".join(sorted(names["streams"])) or "(none: name them with setName())"
    return (
        f"dstream shell: {app} is running. In scope: ssc, sc, spark, streams, Time, Duration\n"
        f"Named streams: {streams}\n"
        "Queries read completed intervals: stream.latest(), stream.at('-10s'), "
        "state.snapshot(), state.lookup(key),\n"
        "stream.createOrReplaceTempView('name') then spark.sql(...). Ctrl-D stops the program."
    )


def _ipython() -> Any:
    """IPython's entry point when it is installed (outside any except block: an error typed
    at the console would otherwise be shown chained to the ImportError)."""
    try:
        from IPython import start_ipython
    except ImportError:
        return None
    return start_ipython


def run_shell(app: str, args: list[str]) -> int:
    program = Program(app, args, "shell")
    program.start()
    try:
        ssc = program.wait_for_context()
    except ProgramError:
        if program.error is None:  # ended without starting a StreamingContext
            raise
        return program.exit_status()
    names = namespace(ssc)
    banner = _banner(program.path.name, names)
    try:
        start_ipython = _ipython()
        if start_ipython is None:
            code.interact(banner=banner, local=names, exitmsg="stopping the program ...")
        else:
            print(banner)
            start_ipython(argv=["--no-banner"], user_ns=names)
    finally:
        if engine_of(ssc).state == "active":
            ssc.stop(stopSparkContext=True, stopGraceFully=True)
        program.join(120)
    print("dstream shell: the program stopped", flush=True)
    return program.exit_status()
