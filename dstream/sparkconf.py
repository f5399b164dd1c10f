"""The Spark settings dstream recommends for streaming, as one SparkConf.

Every one is a plain Spark setting and is explained here with what it was measured to do on
this project's machine (2 cores, Spark 4.3.0, local[2]); a SparkContext created without them
works, only slower. They must be set before the SparkContext starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from dstream.versions import DAEMON_MODULE

if TYPE_CHECKING:
    from pyspark import SparkConf

__all__ = [
    "DRIVER_CLASS_ARCHIVE",
    "EXECUTOR_CLASS_ARCHIVE",
    "RECOMMENDED",
    "SPECULATION",
    "recommended_conf",
    "recommended_settings",
    "worker_daemon",
]

# The class-data-sharing archive of an executor JVM's classes that `make shim` dumps on this
# machine (jvm-shim/executor_archive.py): a local-cluster executor starts with ~2 s less CPU
# (4.3-4.5 s to registration without it, 2.4-2.6 s with it), which a replacement executor
# otherwise takes from the cores recovering a lost one's work. Not shipped in the wheel.
EXECUTOR_CLASS_ARCHIVE = Path(__file__).parent / "jars" / "executor-classes.jsa"
# The same for a driver JVM: SparkContext() in 1.5-1.8 s instead of 2.9-3.0 s, its first job
# 1.2-1.35 s instead of 1.6-1.65 s (local[2], three starts each).
DRIVER_CLASS_ARCHIVE = Path(__file__).parent / "jars" / "driver-classes.jsa"

RECOMMENDED: dict[str, str] = {
    # The JVM talks to its Python workers over Unix domain sockets instead of TCP loopback:
    # a two-task Python job went from 104 ms to 53 ms (median of 30), and a streaming
    # interval runs several such jobs.
    "spark.python.unix.domain.socket.enabled": "true",
    # A reduce task fetching shuffle output from an executor that just died retries the
    # refused connection 3 times 5 s apart (Spark's default) before it reports the fetch
    # failure that makes the scheduler recompute the lost outputs; meanwhile it holds its
    # core, so the survivors run little else. Event logs of WordCount with one executor of
    # three killed (bench/paper/faults.py --figures loss): such tasks held both surviving cores
    # for 6 s of a 6.8 s failure interval. One retry 200 ms later reports it within ~0.3 s
    # and still rides out a connection reset; a live executor that is slow to answer is
    # covered by the connection timeout, not by these retries.
    "spark.shuffle.io.maxRetries": "1",
    "spark.shuffle.io.retryWait": "200ms",
    # How long a task waits for a free core where its input is cached before it runs
    # elsewhere (Spark's default 3 s, at each locality level). When a host is lost, the
    # tasks that preferred it wait that long with the surviving cores idle: a WordCount
    # failure interval on the standalone cluster spent 3.0 of its 6.9 s so. An interval is
    # 0.25-2 s; reading a state partition from another executor costs milliseconds.
    "spark.locality.wait": "200ms",
    # When an executor is lost, the blocks it held a copy of are copied again from their
    # other copy to a surviving executor, so state kept with two copies
    # (StreamingSettings.state_replicas = 2) keeps two through the next loss as well.
    # Blocks with one copy are not concerned.
    "spark.storage.replication.proactive": "true",
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


# Graceful executor removal for the elastic policy (dstream.scheduler.elastic): an executor
# it removes is decommissioned instead of killed, and first moves its cached blocks (the
# state) and shuffle files to the executors that stay, so nothing it held is recomputed.
# Read when the SparkContext starts: set them in its SparkConf (recommended_conf(...,
# decommission=True) or spark-submit --conf).
DECOMMISSION: dict[str, str] = {
    "spark.decommission.enabled": "true",
    "spark.storage.decommission.enabled": "true",
    "spark.storage.decommission.rddBlocks.enabled": "true",
    "spark.storage.decommission.shuffleBlocks.enabled": "true",
    # How often a leaving executor looks for blocks still to move (Spark's default, 30 s,
    # kept a decommissioned executor, and its cores, for ~25 s after a 5 s interval).
    "spark.storage.decommission.replicationReattemptInterval": "1s",
}


def conf_flag(conf: SparkConf, key: str) -> bool:
    """A boolean Spark setting as Spark reads it ("true" in any case; unset is false)."""
    return (conf.get(key) or "false").strip().lower() == "true"


def conf_number(conf: SparkConf, key: str, default: float) -> float:
    """A positive number from a Spark setting (``default`` when unset); a value that is not
    one is refused naming the setting."""
    text = conf.get(key)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise ValueError(
            f"{key}={text!r} must be a positive number (records per second), e.g. "
            f"--conf {key}={default:g}; or leave it unset"
        )
    return value


def recommended_conf(
    master: str = "local[2]",
    app_name: str = "dstream",
    speculation: bool = False,
    daemon: bool | None = None,
    decommission: bool = False,
) -> SparkConf:
    """A SparkConf with ``master``, ``app_name``, :data:`RECOMMENDED`, if asked
    :data:`SPECULATION`, if asked :data:`DECOMMISSION`, dstream's Python worker daemon
    (``daemon``; by default for local masters only), for local masters the driver's class archive
    (:data:`DRIVER_CLASS_ARCHIVE`) and for ``local-cluster`` ones the executors'
    (:data:`EXECUTOR_CLASS_ARCHIVE`), when `make executor-archive` built them."""
    from pyspark import SparkConf

    conf = SparkConf().setMaster(master).setAppName(app_name)
    for key, value in recommended_settings(master, speculation, daemon).items():
        conf.set(key, value)
    for key, value in (DECOMMISSION if decommission else {}).items():
        conf.set(key, value)
    return conf


def recommended_settings(
    master: str, speculation: bool = False, daemon: bool | None = None
) -> dict[str, str]:
    """What :func:`recommended_conf` sets for ``master`` (a SparkConf built in a process that
    already runs a SparkContext also holds that context's settings, as system defaults)."""
    settings = dict(RECOMMENDED)
    # Only local-cluster executors surely run this machine's JVM and this pyspark's jars;
    # one that cannot use the archive (a changed JVM) starts without it (-Xshare:auto).
    if master.startswith("local-cluster") and EXECUTOR_CLASS_ARCHIVE.is_file():
        settings["spark.executor.extraJavaOptions"] = (
            f"-XX:SharedArchiveFile={EXECUTOR_CLASS_ARCHIVE} -Xshare:auto"
        )
    # A driver of a local master runs on this machine, with this pyspark's jars.
    if master.startswith("local") and DRIVER_CLASS_ARCHIVE.is_file():
        settings["spark.driver.extraJavaOptions"] = (
            f"-XX:SharedArchiveFile={DRIVER_CLASS_ARCHIVE} -Xshare:auto"
        )
    # Python workers that do not walk every object they hold between two tasks
    # (dstream/tasks/daemon.py: PySpark's daemon, freezing what a worker keeps after its
    # first tasks). Spark starts it before a task's --py-files are on its path, so an
    # executor that cannot import dstream fails every task: set for local masters (this
    # machine's Python), elsewhere only when asked (dstream installed on every node).
    settings.update(worker_daemon(master, daemon))
    if speculation:
        settings.update(SPECULATION)
    return settings


def worker_daemon(master: str | None, daemon: bool | None = None) -> dict[str, str]:
    """dstream's Python worker daemon setting, if ``daemon`` or (by default) the master is
    local (none given: pyspark's default, local[*]), where executors run this Python."""
    if daemon if daemon is not None else (master is None or master.startswith("local")):
        return {"spark.python.daemon.module": DAEMON_MODULE}
    return {}
