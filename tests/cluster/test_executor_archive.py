"""The executors' class archive (jvm-shim/executor_archive.py, built by `make shim`): the
recommended conf of a local-cluster master hands it to the executor JVMs, and an executor
started with it has it mapped (its classes come from the archive, not from the jars)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dstream.sparkconf import EXECUTOR_CLASS_ARCHIVE, recommended_conf

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.cluster

PROBE = """
import json
from pyspark import SparkContext
from dstream.sparkconf import recommended_conf
from testbed.faults import wait_for_executors
from testbed.processes import executor_pids

sc = SparkContext(conf=recommended_conf("local-cluster[1,1,1024]", "archive-probe"))
try:
    wait_for_executors(sc, 1)
    assert sc.parallelize(range(10), 2).map(lambda x: x + 1).sum() == 55
    (pid,) = executor_pids(sc.applicationId).values()
    with open(f"/proc/{pid}/maps") as maps:
        mapped = sorted({line.split()[-1] for line in maps if line.rstrip().endswith(".jsa")})
    print(json.dumps({"mapped": mapped}))
finally:
    sc.stop()
"""


def test_local_cluster_executors_start_from_the_class_archive() -> None:
    assert EXECUTOR_CLASS_ARCHIVE.is_file(), "no executor class archive: run `make shim`"
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
    assert str(EXECUTOR_CLASS_ARCHIVE) in json.loads(line)["mapped"]
