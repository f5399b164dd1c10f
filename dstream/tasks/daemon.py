"""PySpark's Python worker daemon, with the garbage collector's work between tasks cut
(``spark.python.daemon.module = dstream.tasks.daemon``, in :mod:`dstream.sparkconf`).

A reused PySpark worker runs a full ``gc.collect()`` after every task, before it takes the
next one. A full collection walks every object the process holds, and a worker of this
engine holds pyarrow, numpy, PySpark and the engine's own modules: profiled with py-spy
during a windowed WordCount, half of a worker's samples were in that collection, and the
second Python pass of a task (the output over a cached window state) waited 20-30 ms for
it. After each of its first :data:`SETTLING_TASKS` tasks a worker here collects once and
then *freezes* what survived (``gc.freeze``: modules, classes, functions, caches); later
collections walk only what was allocated since, i.e. what a task left behind.

Frozen objects are still freed by reference counting; only a reference cycle among them
that becomes garbage later would stay (the modules and caches a worker loads live as long
as it does).

The daemon also imports, once, what every task of this engine imports (:data:`PRELOADED`:
PySpark's worker loop and the engine's task modules, ~100 ms on an idle core) before it
forks workers, so a worker starts with them. Workers are forked when an executor starts and
again whenever the JVM closes one, e.g. after a task failed on a lost executor's shuffle
output: in such a failure interval the first task on each surviving executor spent 0.4 s
starting its new worker, with the cores shared with a replacement executor starting.
Everything else is PySpark's ``pyspark.daemon``, unchanged.
"""

from __future__ import annotations

import gc
import importlib
import socket

import pyspark.daemon as _daemon

__all__ = ["PRELOADED", "SETTLING_TASKS", "preload", "worker"]

SETTLING_TASKS = 3  # the first tasks of a worker import what its later tasks use

# Imported by the daemon before it forks: what loading a task of this engine imports.
PRELOADED = (
    "pyspark.worker",
    "dstream.streams.copartitioned",
    "dstream.tasks.state_merge",
    "dstream.tasks.track_state",
    "dstream.tasks.arrow_text",
)

_pyspark_worker = _daemon.worker
_settling = iter(range(SETTLING_TASKS))  # one item per task still to settle after


def worker(sock: socket.socket, authenticated: bool) -> int:
    """PySpark's ``worker`` (one task), then, while the worker is settling, collect and
    freeze what it keeps."""
    code = _pyspark_worker(sock, authenticated)
    if next(_settling, None) is not None:
        gc.collect()
        gc.freeze()
    return code


def preload() -> None:
    for name in PRELOADED:
        importlib.import_module(name)


if __name__ == "__main__":
    preload()
    _daemon.worker = worker  # the forked child's loop calls the module's ``worker``
    _daemon.manager()
