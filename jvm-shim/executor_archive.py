"""Builds dstream/jars/executor-classes.jsa: a class-data-sharing archive (the JDK's dynamic
AppCDS) of the classes an executor JVM loads, so that executors on this machine start with
Spark's classes already parsed and verified.

Measured on the 2-core machine (local-cluster[1,1,1024], one executor JVM, twice each): CPU
until the executor registered 4.3-4.5 s without the archive, 2.4-2.6 s with it; after its
first Python task 5.4-5.5 s against 3.0-3.2 s. On ``local-cluster`` the executor that
replaces a killed one starts on the cores the surviving executors are recomputing on, so
those seconds are recovery time (bench/README.md, "One executor lost").

``dstream.sparkconf.recommended_conf`` passes it to ``local-cluster`` executors (they run
this machine's JVM with this pyspark's jars); other masters' executors run elsewhere and do
not get it. The archive is only valid for the JVM and classpath it was dumped with: it is
rebuilt when either changes (a stamp beside it), and a JVM that cannot use it starts without
it (``-Xshare:auto``). Building it is optional: on failure this prints why and exits 0.

The executor's archive is dumped by ``jcmd VM.cds dynamic_dump`` while the executor runs
(see :func:`dump_executor`). It builds dstream/jars/driver-classes.jsa from a ``local[2]``
driver JVM, which writes it as it exits (``-XX:ArchiveClassesAtExit``; run in a child
process: PySpark's JVM exits when its Python does, and nothing kills it meanwhile). A
driver on this machine then starts with Spark's classes parsed: SparkContext() in 1.5-1.8 s
instead of 2.9-3.0 s, its first job 1.2-1.35 s instead of 1.6-1.65 s (three starts each,
local[2]); ``recommended_conf`` passes it to drivers of local masters.

    PY=.venv/bin/python; $PY jvm-shim/executor_archive.py      (make shim runs it)
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ARCHIVE = REPO / "dstream" / "jars" / "executor-classes.jsa"
DRIVER_ARCHIVE = REPO / "dstream" / "jars" / "driver-classes.jsa"


def fingerprint() -> str:
    """What the archive depends on: the JVM build and the jars on the executor's classpath."""
    import pyspark

    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=True)
    jars = Path(pyspark.__file__).parent / "jars"
    listing = sorted(f"{p.name}:{p.stat().st_size}" for p in jars.glob("*.jar"))
    return "\n".join([java.stderr.strip(), str(jars), *listing]) + "\n"


def cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # exited meanwhile
        return b""


def pids_of(marker: str) -> list[int]:
    """The processes with ``marker`` on their command line (an executor has its
    application's id there, a driver its application's name)."""
    pids = (int(p.name) for p in Path("/proc").glob("[0-9]*"))
    return [pid for pid in pids if marker.encode() in cmdline(pid)]


def running(marker: str) -> bool:
    """Whether a process with ``marker`` on its command line is still alive."""
    return bool(pids_of(marker))


def dump(
    master: str, jvm: str, options: str, before_stop: Callable[[str], None] | None = None
) -> str:
    """Run a Python job with a shuffle and a cached RDD on ``master``, the ``jvm``
    ("driver" or "executor") JVMs started with ``options``; ``before_stop`` (given the
    application's id) runs after the job, before the context stops. The application's id."""
    from pyspark import SparkConf, SparkContext

    conf = (
        SparkConf()
        .setMaster(master)
        .setAppName(f"dstream-{jvm}-archive")
        .set("spark.ui.enabled", "false")
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.pyspark.python", sys.executable)
        .set(f"spark.{jvm}.extraJavaOptions", options)
    )
    sc = SparkContext(conf=conf)
    try:
        words = sc.parallelize([f"w{i % 97}" for i in range(20000)], 2)
        counts = dict(words.map(lambda w: (w, 1)).reduceByKey(lambda a, b: a + b).collect())
        assert sum(counts.values()) == 20000, counts
        rdd = sc.parallelize(range(1000), 2).cache()
        assert rdd.count() == 1000 and rdd.sum() == 499500
        if before_stop is not None:
            before_stop(str(sc.applicationId))
        return str(sc.applicationId)
    finally:
        sc.stop()


def dump_driver(target: Path) -> None:
    """The job on ``local[2]`` in a child process (this script, ``--driver TARGET``): its
    driver JVM writes the archive as it exits, which it does with its Python."""
    subprocess.run([sys.executable, __file__, "--driver", str(target)], check=True, timeout=300)
    wait_until_gone("dstream-driver-archive")  # the JVM outlives its Python by a moment


def wait_until_gone(marker: str) -> None:
    """Until no process has ``marker`` on its command line (a JVM writing its archive)."""
    pause, deadline = threading.Event(), time.monotonic() + 120
    while running(marker):
        if time.monotonic() > deadline:
            raise RuntimeError("the JVM did not exit within 120 s")
        pause.wait(0.5)


def dump_executor(target: Path) -> None:
    """The executor JVM's archive, written by ``jcmd VM.cds dynamic_dump`` while the
    executor still runs. Not at its exit (``-XX:ArchiveClassesAtExit``): a local-cluster
    worker stops its executors with SIGTERM and a SIGKILL 10 s later (Spark's
    ``ExecutorRunner``), and a busy machine (``make test-deps`` builds four things at once)
    writes the archive slower than that: a fresh-clone run had none."""

    def write(app_id: str) -> None:
        pids = [p for p in pids_of(app_id) if b"CoarseGrainedExecutorBackend" in cmdline(p)]
        if len(pids) != 1:
            raise RuntimeError(f"expected one executor JVM of {app_id}, found {pids}")
        # attachTimeout: the attach waits for the JVM's signal thread, slow when busy
        attach = ["jcmd", "-J-Dsun.tools.attach.attachTimeout=120000", str(pids[0])]
        done = subprocess.run(
            [*attach, "VM.cds", "dynamic_dump", str(target)],
            check=False,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0 or not target.is_file():
            raise RuntimeError(f"jcmd VM.cds dynamic_dump failed: {done.stdout}{done.stderr}")

    wait_until_gone(
        dump("local-cluster[1,1,1024]", "executor", "-XX:+RecordDynamicDumpInfo", write)
    )


def build(archive: Path, what: str, wanted: str, make: Callable[[Path], None]) -> None:
    """``archive`` from ``make``, unless its stamp says it is up to date; optional: on
    failure it says why, and that JVM starts without it."""
    stamp = archive.with_name(archive.name + ".stamp")
    if archive.is_file() and stamp.is_file() and stamp.read_text() == wanted:
        print(f"jvm-shim: up to date: {archive}")
        return
    archive.parent.mkdir(parents=True, exist_ok=True)
    tmp = archive.with_name(f"{archive.name}.{os.getpid()}.tmp")
    try:
        make(tmp)
        if not tmp.is_file():
            raise RuntimeError(f"the {what} JVM wrote no archive")
        os.replace(tmp, archive)
        stamp.write_text(wanted)
    except Exception as exc:  # optional
        tmp.unlink(missing_ok=True)
        print(
            f"jvm-shim: {what} class archive not built ({exc}); {what}s start without it",
            file=sys.stderr,
        )
        return
    print(f"jvm-shim: built {archive} ({archive.stat().st_size // 1024} KiB)")


def main() -> int:
    if sys.argv[1:2] == ["--driver"]:  # the child of dump_driver
        dump("local[2]", "driver", f"-XX:ArchiveClassesAtExit={sys.argv[2]}")
        return 0
    try:
        wanted = fingerprint()
    except (ImportError, OSError, subprocess.CalledProcessError) as exc:
        print(f"jvm-shim: no class archives (no java or pyspark: {exc})", file=sys.stderr)
        return 0
    build(ARCHIVE, "executor", wanted, dump_executor)
    build(DRIVER_ARCHIVE, "driver", wanted, dump_driver)
    return 0


if __name__ == "__main__":
    sys.exit(main())
