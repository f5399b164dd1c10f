"""The operating-system side of executors on this machine: which JVM runs which executor, and
a process's descendants. Linux only (reads ``/proc``); for fault injection in tests and
benchmarks."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

__all__ = ["executor_pids", "process_tree", "standalone_worker_of"]

_EXECUTOR_MAIN: Final = b"org.apache.spark.executor.CoarseGrainedExecutorBackend"
_WORKER_MAIN: Final = b"org.apache.spark.deploy.worker.Worker"


def executor_pids(app_id: str, proc: Path = Path("/proc")) -> dict[str, int]:
    """Maps executor id to the OS pid of its JVM, for executors of ``app_id`` on this host.

    Linux only. Executor JVMs (``local-cluster`` or standalone workers on this machine) run
    ``CoarseGrainedExecutorBackend --executor-id <id> ... --app-id <app>``; their command lines
    are read from ``/proc/<pid>/cmdline``. Use ``sc.applicationId`` for ``app_id``. Processes
    that vanish while scanning are skipped.
    """
    found: dict[str, int] = {}
    try:
        entries = os.listdir(proc)
    except OSError:
        return found
    for name in entries:
        if not name.isdigit():
            continue
        try:
            argv = (proc / name / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if _EXECUTOR_MAIN not in argv:
            continue
        args = argv[argv.index(_EXECUTOR_MAIN) + 1 :]
        opts = {
            args[i].decode(errors="replace"): args[i + 1].decode(errors="replace")
            for i in range(len(args) - 1)
            if args[i].startswith(b"--")
        }
        if opts.get("--app-id") == app_id and "--executor-id" in opts:
            found[opts["--executor-id"]] = int(name)
    return found


def _parent_pid(process: Path) -> int:
    """The parent pid from ``/proc/<pid>/stat`` (after the command name, which may hold
    spaces and parentheses: hence the split at the last ")")."""
    return int(process.joinpath("stat").read_text().rsplit(")", 1)[1].split()[1])


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants (an executor JVM, its Python daemon and workers)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            parent = _parent_pid(Path("/proc") / entry)
        except OSError:
            continue
        children.setdefault(parent, []).append(int(entry))
    tree, todo = [], [pid]
    while todo:
        p = todo.pop()
        tree.append(p)
        todo.extend(children.get(p, []))
    return tree


def standalone_worker_of(executor_pid: int, proc: Path = Path("/proc")) -> int | None:
    """The pid of the standalone Worker JVM that launched executor ``executor_pid`` (its
    parent), or None when the parent is not one (``local-cluster`` runs its Workers inside
    the driver's JVM, so there is no Worker process to kill)."""
    try:
        parent = _parent_pid(proc / str(executor_pid))
        argv = (proc / str(parent) / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    return parent if _WORKER_MAIN in argv else None
