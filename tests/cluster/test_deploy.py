"""docs/deploy.md, end to end: ``spark-submit`` of an unchanged dstream program to a
standalone cluster (3 workers, separate hosts to Spark) whose executors' Python has pyspark
and the libraries but not dstream, as on a cluster where only the submitting machine has it
installed. With ``--py-files dstream.zip`` the program runs: its
state is exact interval by interval, and a rescale's narrow regroup (the JVM shim's RDD,
shipped by dstream itself) runs on those executors. Without dstream shipped, ``start()``
stops with the one-line error that names the executors' Python and the fix (make
test-full)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path
from typing import Any

import pytest

from testbed.standalone import StandaloneCluster

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]
PROGRAM = Path(__file__).with_name("deploy_program.py")


def executor_python(directory: Path) -> Path:
    """This Python without its site directory's ``.pth`` files (``-S``): pyspark, numpy and
    the rest stay importable through PYTHONPATH, dstream (an editable install, a ``.pth``
    entry) does not."""
    site = sysconfig.get_paths()["purelib"]
    script = directory / "python-without-dstream"
    script.write_text(
        "#!/bin/sh\n"
        f'PYTHONPATH="${{PYTHONPATH:+$PYTHONPATH:}}{site}" exec {sys.executable} -S "$@"\n'
    )
    script.chmod(0o755)
    probe = subprocess.run(
        [str(script), "-c", "import pyspark, numpy; import dstream"],
        capture_output=True,
        text=True,
        check=False,
        cwd=directory,
    )
    assert "No module named 'dstream'" in probe.stderr, probe.stderr
    return script


def dstream_zip(directory: Path) -> Path:
    """The dstream package as docs/deploy.md ships it: its modules and the shim jar."""
    out = directory / "dstream.zip"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for path in sorted((REPO / "dstream").rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".jsa":
                z.write(path, path.relative_to(REPO).as_posix())
    return out


def submit(cluster: StandaloneCluster, python: Path, work: Path, *extra: str) -> Any:
    spark_submit = Path(sys.executable).with_name("spark-submit")
    env = {
        **os.environ,
        "PYSPARK_PYTHON": str(python),
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    args = [str(spark_submit), "--master", cluster.master_url, *extra]
    args += ["--conf", "spark.executor.memory=512m", "--conf", "spark.ui.enabled=false"]
    args += ["--conf", "spark.driver.host=127.0.0.1", str(PROGRAM)]
    return subprocess.run(
        args,
        capture_output=True,
        text=True,
        check=False,
        env=env,
        cwd=work,
        timeout=int(os.environ.get("DEPLOY_TIMEOUT", "300")),
    )


def test_a_program_submitted_with_dstream_zipped_runs_on_executors_without_dstream(
    cluster: StandaloneCluster, tmp_path: Path
) -> None:
    python = executor_python(tmp_path)  # proven to lack dstream
    ran = submit(cluster, python, tmp_path, "--py-files", str(dstream_zip(tmp_path)))
    # spark-submit passes its Python program's stderr on in its own stdout.
    assert ran.returncode == 0, ran.stdout[-5000:]
    (report,) = [json.loads(ln) for ln in ran.stdout.splitlines() if ln.startswith("{")]
    (source,) = report["executors_import_dstream_from"]
    assert "dstream.zip" in source  # shipped: the executors' Python has no dstream
    assert report["intervals"] >= 5 and report["wrong"] == []
    assert report["partitions"][:3] == [2, 2, 2] and report["partitions"][-1] == 4
    assert "rescale shuffles the state" not in ran.stdout  # the shim's narrow regroup ran


# make test-full: the same cluster without the zip (a driver and three executors more,
# ~15 s alone); the probe's message itself is tested without Spark in tests/unit/test_versions.py.
@pytest.mark.full
def test_without_dstream_on_the_executors_start_stops_naming_their_python_and_the_fix(
    cluster: StandaloneCluster, tmp_path: Path
) -> None:
    python = executor_python(tmp_path)
    refused = submit(cluster, python, tmp_path, "--conf", "spark.task.maxFailures=1")
    assert refused.returncode != 0
    error = "dstream.versions.ExecutorEnvironmentError: "
    (line,) = [ln for ln in refused.stdout.splitlines() if ln.startswith(error)]
    assert f"the executors' Python ({python})" in line
    assert "No module named 'dstream'" in line and "--py-files" in line
