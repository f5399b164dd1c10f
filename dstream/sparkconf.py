"""The Spark settings dstream recommends for streaming, as one SparkConf.

Every one is a plain Spark setting and is explained here with what it was measured to do on
this project's machine (2 cores, Spark 4.3.0, local[2]); a SparkContext created without them
works, only slower. They must be set before the SparkContext starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark import SparkConf

__all__ = ["RECOMMENDED", "SPECULATION", "recommended_conf"]

RECOMMENDED: dict[str, str] = {
    # The JVM talks to its Python workers over Unix domain sockets instead of TCP loopback:
    # a two-task Python job went from 104 ms to 53 ms (median of 30), and a streaming
    # interval runs several such jobs.
    "spark.python.unix.domain.socket.enabled": "true",
    # Python workers that do not walk every object they hold between two tasks
    # (dstream/tasks/daemon.py: PySpark's daemon, freezing what a worker keeps after its
    # first tasks). The executors' Python must import dstream, as its tasks do.
    "spark.python.daemon.module": "dstream.tasks.daemon",
    # A progress bar on the console is noise for a job every second.
    "spark.ui.showConsoleProgress": "false",
}


# Speculative copies of slow tasks, tuned for the 50-500 ms tasks of a streaming interval
# (read against Spark 4's TaskSetManager.checkSpeculatableTasks). A copy is considered once
# half the stage's tasks finished (quantile), for a task running longer than 1.4x their
# median (multiplier) and at least minTaskRuntime; the check runs every interval. The
# "efficiency" filter is off: it judges a task by the input rate its heartbeats report, and
# sub-second tasks never send one. Spark never places a copy on a host where the task
# already runs, so this needs executors on several hosts (local-cluster has one).
SPECULATION: dict[str, str] = {
    "spark.speculation": "true",
    "spark.speculation.multiplier": "1.4",
    "spark.speculation.quantile": "0.5",
    "spark.speculation.minTaskRuntime": "50ms",
    "spark.speculation.interval": "50ms",
    "spark.speculation.efficiency.enabled": "false",
}


def recommended_conf(
    master: str = "local[2]", app_name: str = "dstream", speculation: bool = False
) -> SparkConf:
    """A SparkConf with ``master``, ``app_name``, :data:`RECOMMENDED` and, if asked,
    :data:`SPECULATION`."""
    from pyspark import SparkConf

    conf = SparkConf().setMaster(master).setAppName(app_name)
    for key, value in RECOMMENDED.items():
        conf.set(key, value)
    if speculation:
        for key, value in SPECULATION.items():
            conf.set(key, value)
    return conf
