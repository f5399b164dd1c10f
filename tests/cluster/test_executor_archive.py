"""The class archives (jvm-shim/executor_archive.py, built by `make executor-archive`): the
recommended conf of a local-cluster master hands one to the executor JVMs and, as for every
local master, the other to the driver's; a JVM started with one has it mapped (its classes
come from the archive, not from the jars)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dstream.sparkconf import DRIVER_CLASS_ARCHIVE, EXECUTOR_CLASS_ARCHIVE, recommended_conf

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.cluster

PROBE = """
import json
from pyspark import SparkContext
from dstream.sparkconf import recommended_conf
from testbed.faults import wait_for_executors
from testbed.processes import executor_pids_of

sc = SparkContext(conf=recommended_conf("local-cluster[1,1,1024]", "archive-probe"))
try:
    wait_for_executors(sc, 1)
    assert sc.parallelize(range(10), 2).map(lambda x: x + 1).sum() == 55
    (pid,) = executor_pids_of(sc).values()

    def archives(pid):
        with open(f"/proc/{pid}/maps") as maps:
            return sorted({line.split()[-1] for line in maps if line.rstrip().endswith(".jsa")})

    print(json.dumps({"mapped": archives(pid), "driver": archives(sc._gateway.proc.pid)}))
finally:
    sc.stop()
"""


def test_local_cluster_executors_and_the_driver_start_from_the_class_archives() -> None:
    assert EXECUTOR_CLASS_ARCHIVE.is_file(), "no executor class archive: run `make shim`"
    assert DRIVER_CLASS_ARCHIVE.is_file(), "no driver class archive: run `make shim`"
    driver = f"-XX:SharedArchiveFile={DRIVER_CLASS_ARCHIVE} -Xshare:auto"
    for local in ("local[2]", "local-cluster[2,1,512]"):
        assert recommended_conf(local).get("spark.driver.extraJavaOptions") == driver
    assert recommended_conf("spark://h:7077").get("spark.driver.extraJavaOptions") is None
    options = recommended_conf("local-cluster[2,1,512]").get("spark.executor.extraJavaOptions")
    assert options == f"-XX:SharedArchiveFile={EXECUTOR_CLASS_ARCHIVE} -Xshare:auto"
    # Other masters' executors may run another JVM on another machine: no archive.
    assert recommended_conf("local[2]").get("spark.executor.extraJavaOptions") is None
    assert recommended_conf("spark://h:7077").get("spark.executor.extraJavaOptions") is None
    proc = subprocess.run(
        [sys.executable, "-c", PROBE],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stderr[-5000:]
    (line,) = [x for x in proc.stdout.splitlines() if x.startswith("{")]
    mapped = json.loads(line)
    assert str(EXECUTOR_CLASS_ARCHIVE) in mapped["mapped"]
    assert str(DRIVER_CLASS_ARCHIVE) in mapped["driver"]
