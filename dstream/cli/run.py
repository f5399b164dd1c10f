"""``dstream run [--master M] [--conf K=V] [--checkpoint DIR] [--progress] APP.py [ARGS]``:
the program as ``spark-submit`` would run it. ``--master`` and ``--conf`` reach the
SparkContext the program creates the way spark-submit's do (settings the program sets on its
own SparkConf still win), and so do dstream's recommended settings
(:data:`dstream.sparkconf.RECOMMENDED`) that neither ``--conf`` nor ``PYSPARK_SUBMIT_ARGS``
gives; ``--checkpoint`` is the checkpoint directory of a StreamingContext
that does not set one; ``--progress`` prints one line per batch. Ctrl-C stops the program
gracefully."""

from __future__ import annotations

import contextvars
import itertools
import os
import shlex

from dstream.cli.program import Program, ProgramError
from dstream.scheduler.progress import ConsoleProgress
from dstream.shutdown import install_sigterm_exit
from dstream.sparkconf import RECOMMENDED, worker_daemon

__all__ = ["run_program", "submit_args"]

CONF_FLAGS = ("--conf", "-c")  # spark-submit's flags for one setting (also --conf=K=V)


def submit_args(env: str, master: str | None, conf: list[str]) -> list[str]:
    """spark-submit's arguments for the program (pure): ``env`` (an existing
    ``PYSPARK_SUBMIT_ARGS``), then ``--master`` and each ``--conf`` given to ``dstream run``,
    then every recommended setting that none of them gives. A setting in ``env`` counts in
    each of spark-submit's forms: ``--conf K=V``, ``--conf=K=V`` and ``-c K=V``."""
    submit = shlex.split(env)
    if submit[-1:] == ["pyspark-shell"]:
        submit.pop()
    if master:
        submit += ["--master", master]
    for setting in conf:
        key, sep, value = setting.partition("=")
        if not sep or not key:
            raise SystemExit(
                f"dstream run: --conf {setting!r} is not KEY=VALUE, e.g. spark.ui.port=4050"
            )
        submit += ["--conf", f"{key}={value}"]
    given = {a.partition("=")[0] for flag, a in itertools.pairwise(submit) if flag in CONF_FLAGS}
    given.update(a[len("--conf=") :].partition("=")[0] for a in submit if a.startswith("--conf="))
    masters = [a for flag, a in itertools.pairwise(submit) if flag == "--master"]
    recommended = {**RECOMMENDED, **worker_daemon(masters[-1] if masters else None)}
    for key, value in recommended.items():
        if key not in given:
            submit += ["--conf", f"{key}={value}"]
    return [*submit, "pyspark-shell"]


def run_program(
    app: str,
    args: list[str],
    master: str | None,
    conf: list[str],
    checkpoint: str | None,
    progress: bool,
) -> int:
    env = os.environ.get("PYSPARK_SUBMIT_ARGS", "")
    os.environ["PYSPARK_SUBMIT_ARGS"] = shlex.join(submit_args(env, master, conf))
    from dstream.context import programs_checkpoint

    context = contextvars.copy_context()
    if checkpoint:
        context.run(programs_checkpoint, checkpoint)
    program = Program(app, args, "run")
    # The program runs on a thread of its own: SIGTERM is turned into an exit here, on the
    # main thread, and the exit stops its context (dstream.shutdown).
    install_sigterm_exit()
    program.start(context)
    try:
        ssc = program.wait_for_context()
        if progress:
            ssc.addStreamingListener(ConsoleProgress())
        while program.running:
            program.join(1)
    except ProgramError:
        if program.error is None:  # ended without starting a StreamingContext
            raise
    except KeyboardInterrupt:
        from dstream.context import StreamingContext

        active = StreamingContext.getActive()
        if active is not None:
            active.stop(stopSparkContext=True, stopGraceFully=True)
        program.join(120)
    return program.exit_status()
