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

It builds dstream/jars/driver-classes.jsa the same way, from a ``local[2]`` driver JVM (run
in a child process: PySpark's JVM exits, and writes the archive, when its Python does). A
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


def running(marker: str) -> bool:
    """Whether a process with ``marker`` on its command line is still alive (an executor
    has its application's id there, a driver its application's name)."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if marker.encode() in cmdline.read_bytes():
                return True
        except OSError:  # exited meanwhile
            continue
    return False


def dump(target: Path, master: str, jvm: str) -> str:
    """Run a Python job with a shuffle and a cached RDD on ``master``, the ``jvm``
    ("driver" or "executor") JVMs with ``-XX:ArchiveClassesAtExit`` (a JVM writes the
    archive when it exits); the application's id."""
    from pyspark import SparkConf, SparkContext

    conf = (
        SparkConf()
        .setMaster(master)
        .setAppName(f"dstream-{jvm}-archive")
        .set("spark.ui.enabled", "false")
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.pyspark.python", sys.executable)
        .set(f"spark.{jvm}.extraJavaOptions", f"-XX:ArchiveClassesAtExit={target}")
    )
    sc = SparkContext(conf=conf)
    try:
        words = sc.parallelize([f"w{i % 97}" for i in range(20000)], 2)
        counts = dict(words.map(lambda w: (w, 1)).reduceByKey(lambda a, b: a + b).collect())
        assert sum(counts.values()) == 20000, counts
        rdd = sc.parallelize(range(1000), 2).cache()
        assert rdd.count() == 1000 and rdd.sum() == 499500
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
    # The executor JVM writes the archive while it exits, after the driver stopped.
    wait_until_gone(dump(target, "local-cluster[1,1,1024]", "executor"))


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
        dump(Path(sys.argv[2]), "local[2]", "driver")
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
