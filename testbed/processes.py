"""The operating-system side of executors on this machine: which JVM runs which executor, and
a process's descendants. Linux only (reads ``/proc``); for fault injection in tests and
benchmarks."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Final

__all__ = [
    "driver_port",
    "executor_pids",
    "executor_pids_of",
    "process_tree",
    "standalone_worker_of",
]

_EXECUTOR_MAIN: Final = b"org.apache.spark.executor.CoarseGrainedExecutorBackend"
_WORKER_MAIN: Final = b"org.apache.spark.deploy.worker.Worker"


def executor_pids(
    app_id: str, driver_port: int | None = None, proc: Path = Path("/proc")
) -> dict[str, int]:
    """Maps executor id to the OS pid of its JVM, for executors of ``app_id`` on this host
    whose driver listens on ``driver_port``.

    Linux only. Executor JVMs (``local-cluster`` or standalone workers on this machine) run
    ``CoarseGrainedExecutorBackend --driver-url spark://...@<host>:<port> --executor-id <id>
    ... --app-id <app>``; their command lines are read from ``/proc/<pid>/cmdline``.
    Processes that vanish while scanning are skipped.

    An application id alone does not name one application on a machine: a standalone Master
    names its applications ``app-<the second it registered>-<its count>``, and each
    ``local-cluster`` has a Master of its own, so two local-cluster drivers that register in
    the same second both run ``app-<second>-0000`` (two `make test` workers did, and one
    run's executor kill SIGKILLed the other run's executor 0). The driver's port tells them
    apart; without it, executors of ``app_id`` under two drivers raise instead of one being
    picked. Use :func:`executor_pids_of` for a SparkContext of this process.
    """
    found: dict[str, dict[str, int]] = {}  # driver URL -> executor id -> pid
    try:
        entries = os.listdir(proc)
    except OSError:
        return {}
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
        if opts.get("--app-id") != app_id or "--executor-id" not in opts:
            continue
        driver = opts.get("--driver-url", "")
        if driver_port is not None and _port_of(driver) != driver_port:
            continue  # another driver's application of the same id
        found.setdefault(driver, {})[opts["--executor-id"]] = int(name)
    if len(found) > 1:
        raise RuntimeError(
            f"executors of application {app_id} belong to {len(found)} drivers on this "
            f"machine ({', '.join(sorted(found))}): a local-cluster's application id is the "
            "second it registered, so two drivers started together share it; pass the "
            "driver's port (executor_pids_of(sc), or driver_port=) to pick one"
        )
    return next(iter(found.values()), {})


def driver_port(sc: Any) -> int:
    """The port the driver of SparkContext ``sc`` listens on (``spark.driver.port``, set
    once the driver started), which its executors' ``--driver-url`` names."""
    port = sc.getConf().get("spark.driver.port")
    if port is None:
        raise RuntimeError("the SparkContext has no spark.driver.port: is it running?")
    return int(port)


def executor_pids_of(sc: Any, proc: Path = Path("/proc")) -> dict[str, int]:
    """:func:`executor_pids` of SparkContext ``sc``'s application (its id and its driver)."""
    return executor_pids(sc.applicationId, driver_port(sc), proc)


def _port_of(driver_url: str) -> int | None:
    """The port of ``spark://CoarseGrainedScheduler@<host>:<port>`` (None if it has none)."""
    port = driver_url.rsplit(":", 1)[-1]
    return int(port) if port.isdigit() else None


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
