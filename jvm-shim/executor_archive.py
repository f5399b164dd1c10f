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

    PY=.venv/bin/python; $PY jvm-shim/executor_archive.py      (make shim runs it)
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ARCHIVE = REPO / "dstream" / "jars" / "executor-classes.jsa"
STAMP = ARCHIVE.with_name(ARCHIVE.name + ".stamp")


def fingerprint() -> str:
    """What the archive depends on: the JVM build and the jars on the executor's classpath."""
    import pyspark

    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=True)
    jars = Path(pyspark.__file__).parent / "jars"
    listing = sorted(f"{p.name}:{p.stat().st_size}" for p in jars.glob("*.jar"))
    return "\n".join([java.stderr.strip(), str(jars), *listing]) + "\n"


def running(app_id: str) -> bool:
    """Whether a process of application ``app_id`` (its executor JVM) is still alive."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if app_id.encode() in cmdline.read_bytes():
                return True
        except OSError:  # exited meanwhile
            continue
    return False


def dump(target: Path) -> str:
    """Run one executor JVM through a Python job with a shuffle, with
    ``-XX:ArchiveClassesAtExit`` (the JVM writes the archive when it exits); the
    application's id."""
    from pyspark import SparkConf, SparkContext

    conf = (
        SparkConf()
        .setMaster("local-cluster[1,1,1024]")
        .setAppName("dstream-executor-archive")
        .set("spark.ui.enabled", "false")
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.pyspark.python", sys.executable)
        .set("spark.executor.extraJavaOptions", f"-XX:ArchiveClassesAtExit={target}")
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


def main() -> int:
    try:
        wanted = fingerprint()
    except (ImportError, OSError, subprocess.CalledProcessError) as exc:
        print(f"jvm-shim: no executor class archive (no java or pyspark: {exc})", file=sys.stderr)
        return 0
    if ARCHIVE.is_file() and STAMP.is_file() and STAMP.read_text() == wanted:
        print(f"jvm-shim: up to date: {ARCHIVE}")
        return 0
    ARCHIVE.parent.mkdir(parents=True, exist_ok=True)
    tmp = ARCHIVE.with_name(f"{ARCHIVE.name}.{os.getpid()}.tmp")
    try:
        app_id = dump(tmp)
        # The executor JVM writes the archive while it exits, after the driver stopped.
        pause, deadline = threading.Event(), time.monotonic() + 120
        while running(app_id):
            if time.monotonic() > deadline:
                raise RuntimeError("the executor JVM did not exit within 120 s")
            pause.wait(0.5)
        if not tmp.is_file():
            raise RuntimeError("the executor JVM wrote no archive")
        os.replace(tmp, ARCHIVE)
        STAMP.write_text(wanted)
    except Exception as exc:  # optional: executors start without it
        tmp.unlink(missing_ok=True)
        print(
            f"jvm-shim: executor class archive not built ({exc}); executors start without it",
            file=sys.stderr,
        )
        return 0
    print(f"jvm-shim: built {ARCHIVE} ({ARCHIVE.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
