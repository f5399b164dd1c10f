"""The ``dstream`` command (also ``python -m dstream``): run, query and replay streaming
programs, and read checkpoint directories.

    dstream shell APP.py [ARGS]            the program, with a console on its live state
    dstream replay APP.py --from T --to T [--speed max|1x|Nx] [-- ARGS]
                                           the program over input that already exists
    dstream run [--master M] [--conf K=V] [--checkpoint DIR] [--progress] APP.py [ARGS]
                                           the program, as spark-submit would run it
    dstream status CHECKPOINT_DIR [--json] what a checkpoint directory holds (no Spark)
"""

from __future__ import annotations

import argparse
import sys

from dstream.cli.program import ProgramError
from dstream.versions import describe

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="dstream", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--version", action="version", version=describe())
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    shell = sub.add_parser("shell", help="run a program and open a console on its live state")
    shell.add_argument("app", help="the program: a Python script that starts a StreamingContext")
    shell.add_argument("args", nargs=argparse.REMAINDER, help="the program's own arguments")
    replay = sub.add_parser(
        "replay",
        help="run a program over existing input, as fast as the cluster allows",
        description="Run APP.py unchanged over the files already in its input directories, "
        "interval by interval from --from to --to; each file goes to the interval its "
        "modification time falls in, and outputs are committed as live. Give the program "
        "other output and checkpoint directories than the live run's (its own arguments, "
        "after --).",
    )
    replay.add_argument("app")
    replay.add_argument("--from", dest="begin", required=True, help="e.g. '2026-11-26 21:00'")
    replay.add_argument("--to", dest="end", required=True, help="e.g. '21:30' or 'now'")
    replay.add_argument("--speed", default="max", help="max (default), 1x, 10x, ...")
    # The program's arguments come after "--" (main() splits them off first): a REMAINDER
    # positional here would take --from and --to for the program's.
    run = sub.add_parser("run", help="run a program with spark-submit-like options")
    run.add_argument("--master", help="e.g. local[4], local-cluster[3,1,1024], spark://host:7077")
    run.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    run.add_argument("--checkpoint", help="checkpoint directory, for a program that sets none")
    run.add_argument("--progress", action="store_true", help="print one line per batch")
    run.add_argument("app")
    run.add_argument("args", nargs=argparse.REMAINDER)
    status = sub.add_parser("status", help="what a checkpoint directory holds (no Spark)")
    status.add_argument("directory")
    status.add_argument("--json", action="store_true", help="machine-readable")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    replay_args: list[str] = []
    if argv[:1] == ["replay"] and "--" in argv:
        cut = argv.index("--")
        argv, replay_args = argv[:cut], argv[cut + 1 :]
    parser = _parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        hint = (
            "; the program's own arguments go after --: dstream replay APP.py --from T --to T "
            "-- ARGS"
            if args.command == "replay"
            else ""
        )
        parser.error(f"unrecognized arguments: {' '.join(unknown)}{hint}")
    try:
        return _run(args, replay_args)
    except ProgramError as exc:  # a user's mistake: one line, no traceback
        print(f"dstream {args.command}: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace, replay_args: list[str]) -> int:
    if args.command == "status":
        from dstream.cli.status import run_status

        return run_status(args.directory, args.json)
    if args.command == "replay":
        from dstream.cli.replay import run_replay

        return run_replay(args.app, replay_args, args.begin, args.end, args.speed)
    program_args = args.args[1:] if args.args[:1] == ["--"] else args.args
    if args.command == "shell":
        from dstream.cli.shell import run_shell

        return run_shell(args.app, program_args)
    if args.command == "run":
        from dstream.cli.run import run_program

        return run_program(
            args.app, program_args, args.master, args.conf, args.checkpoint, args.progress
        )
    raise AssertionError(args.command)  # pragma: no cover - argparse refuses others


if __name__ == "__main__":
    sys.exit(main())
