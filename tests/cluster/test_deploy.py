"""docs/deploy.md, end to end: ``spark-submit`` of an unchanged dstream program to a
standalone cluster (3 workers, separate hosts to Spark) whose executors' Python has pyspark
and the libraries but not dstream, as on a cluster where only the submitting machine has it
installed. With ``--py-files dstream.zip`` the program runs: its
state is exact interval by interval, and a rescale's narrow regroup (the JVM shim's RDD,
shipped by dstream itself) runs on those executors. The same with a packed virtual
environment (``--archives env.tar.gz#env``, venv-pack) as the executors' only Python
(make test-full). Without dstream shipped, ``start()`` stops with the one-line error that names the
executors' Python and the fix (make test-full)."""

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


def dstream_wheel(directory: Path) -> Path:
    """The wheel `make test` built for its clean-install smoke (build/clean-install), or one
    built here the same way."""
    built = sorted((REPO / "build" / "clean-install" / "dist").glob("pyspark_dstream-*.whl"))
    if built:
        return built[-1]
    uv = Path(sys.executable).with_name("uv")
    subprocess.run(
        [str(uv), "build", "--offline", "--quiet", "--wheel", "--out-dir", str(directory), REPO],
        check=True,
    )
    (wheel,) = directory.glob("pyspark_dstream-*.whl")
    return wheel


def packed_env(directory: Path) -> Path:
    """docs/deploy.md's third way: a virtual environment with the dstream wheel (its shim jar
    inside) and the libraries its tasks import, packed by venv-pack. Not pyspark and py4j:
    every Spark worker puts its own pyspark.zip and py4j on its Python workers' path."""
    env = directory / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    uv = Path(sys.executable).with_name("uv")
    install = [
        str(uv),
        "pip",
        "install",
        "--offline",
        "--quiet",
        "--python",
        str(env / "bin/python"),
    ]
    install += ["-c", str(REPO / "requirements.lock"), "--no-deps", str(dstream_wheel(directory))]
    subprocess.run([*install, "cloudpickle", "numpy"], check=True)
    probe = subprocess.run(
        [str(env / "bin/python"), "-c", "import cloudpickle, numpy; import pyspark"],
        capture_output=True,
        text=True,
        check=False,
        cwd=directory,
    )
    assert "No module named 'pyspark'" in probe.stderr, probe.stderr  # only Spark's own
    archive = directory / "env.tar.gz"
    venv_pack = Path(sys.executable).with_name("venv-pack")
    subprocess.run([str(venv_pack), "-p", str(env), "-o", str(archive), "-q"], check=True)
    return archive


def submit(cluster: StandaloneCluster, python: Path | str, work: Path, *extra: str) -> Any:
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


def exact_and_rescaled(ran: Any) -> list[str]:
    """The submitted program's report checked; where its executors imported dstream from
    (one place per executor at most)."""
    # spark-submit passes its Python program's stderr on in its own stdout.
    assert ran.returncode == 0, ran.stdout[-5000:]
    (report,) = [json.loads(ln) for ln in ran.stdout.splitlines() if ln.startswith("{")]
    assert report["intervals"] >= 5 and report["wrong"] == []
    assert report["partitions"][:3] == [2, 2, 2] and report["partitions"][-1] == 4
    assert "rescale shuffles the state" not in ran.stdout  # the shim's narrow regroup ran
    sources: list[str] = report["executors_import_dstream_from"]
    assert 1 <= len(sources) <= 3, sources
    return sources


def test_a_program_submitted_with_dstream_zipped_runs_on_executors_without_dstream(
    cluster: StandaloneCluster, tmp_path: Path
) -> None:
    python = executor_python(tmp_path)  # proven to lack dstream
    ran = submit(cluster, python, tmp_path, "--py-files", str(dstream_zip(tmp_path)))
    # Shipped: the executors' Python has no dstream of its own.
    assert all("dstream.zip" in source for source in exact_and_rescaled(ran))


# make test-full: the packed venv (a venv built, packed and unpacked on three executors; ~28 s
# of CPU alone, ~48 s of make test beside the other worker). make test proves the shipped
# zip, the way onto executors without dstream, above.
@pytest.mark.full
def test_a_program_submitted_with_a_packed_venv_runs_on_that_venvs_python(
    cluster: StandaloneCluster, tmp_path: Path
) -> None:
    archive = packed_env(tmp_path)
    # The executors run the Python of the archive Spark unpacked into their working
    # directory as ./env: nothing of this machine's venvs is on their path.
    ran = submit(cluster, "./env/bin/python", tmp_path, "--archives", f"{archive}#env")
    for source in exact_and_rescaled(ran):
        assert "/env/lib/python3" in source and str(tmp_path) not in source, source


# make test-full: the same cluster without the zip (a driver and three executors more,
# ~15 s alone); the probe's message itself is tested without Spark in tests/unit/test_versions.py.
@pytest.mark.full
def test_without_dstream_on_the_executors_start_stops_naming_their_python_and_the_fix(
    cluster: StandaloneCluster, tmp_path: Path
) -> None:
    python = executor_python(tmp_path)
    refused = submit(cluster, python, tmp_path)  # Spark's default: 4 attempts per task
    assert refused.returncode != 0
    error = "dstream.versions.ExecutorEnvironmentError: "
    (line,) = [ln for ln in refused.stdout.splitlines() if ln.startswith(error)]
    assert f"the executors' Python ({python} -> {sys.executable}, Python " in line
    assert "No module named 'dstream'" in line and "--py-files" in line
    # Printed once: the probe's task does not fail on such an executor, so Spark logs no
    # failed attempt with its traceback before it (~180 lines did).
    assert refused.stdout.count("No module named 'dstream'") == 1, refused.stdout[-5000:]
    assert "Lost task" not in refused.stdout + refused.stderr
