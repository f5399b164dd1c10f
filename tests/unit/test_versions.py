"""The pyspark line dstream runs on, and what `dstream --version` says."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from dstream import __version__
from dstream.cli import main
from dstream.versions import UnsupportedPySparkError, check_pyspark, describe


@pytest.mark.parametrize("version", ["4.3.0", "4.3.2", "4.3.1.dev0", "4.3.0rc1"])
def test_the_4_3_line_is_accepted(version: str) -> None:
    check_pyspark(version)


@pytest.mark.parametrize("version", ["4.2.1", "4.4.0", "3.5.3", "5.0.0", "four"])
def test_any_other_pyspark_is_refused_naming_both_versions_and_the_fix(version: str) -> None:
    with pytest.raises(UnsupportedPySparkError) as refused:
        check_pyspark(version)
    message = str(refused.value)
    assert f"imports pyspark {version}" in message
    assert "dstream runs on pyspark 4.3.x" in message
    assert "pip install 'pyspark>=4.3.0,<4.4'" in message


def test_version_names_the_distribution_pyspark_and_python(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    printed = capsys.readouterr().out.strip()
    assert printed == describe()
    assert printed.startswith(f"pyspark-dstream {__version__} (import dstream), pyspark 4.3.")
    assert printed.endswith(f"Python {platform.python_version()}")


def test_hdfs_paths_without_the_webhdfs_clients_name_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    from dstream.storage.taskfs import require_webhdfs_client

    require_webhdfs_client("the checkpoint directory")  # installed here (the hdfs extra)
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: None if name == "hdfs" else find_spec(name)
    )
    with pytest.raises(ValueError, match=r"with the hdfs package, not installed in this") as e:
        require_webhdfs_client("the checkpoint directory 'hdfs://nn:8020/ckpt'")
    assert "pip install 'pyspark-dstream[hdfs]'" in str(e.value)
    assert "the checkpoint directory 'hdfs://nn:8020/ckpt' is on HDFS" in str(e.value)


class FakeSparkContext:
    """What probe_executors and default_workers_python read of a SparkContext; its one job
    either returns ``versions`` or fails with ``error``."""

    def __init__(self, master: str, versions: object = None, error: str = "") -> None:
        self.master = master
        self.pythonExec = "python3"
        self.jobs = 0
        self._versions, self._error = versions, error

    @property
    def _jsc(self) -> FakeSparkContext:  # dstream.jvm.live_conf: sc._jsc.sc().conf()
        return self

    def sc(self) -> FakeSparkContext:
        return self

    def conf(self) -> FakeSparkContext:  # a JVM SparkConf with no settings
        return self

    def contains(self, key: str) -> bool:
        return False

    def parallelize(self, data: object, slices: int) -> FakeSparkContext:
        return self

    def mapPartitions(self, f: object) -> FakeSparkContext:
        return self

    def collect(self) -> list[object]:
        self.jobs += 1
        if self._error:
            raise RuntimeError(self._error)
        return [self._versions]


def test_executors_are_probed_once_and_only_where_they_may_run_another_python() -> None:
    import pyspark

    from dstream.versions import probe_executors

    same = (__version__, pyspark.__version__, "/env/bin/python", "3.11.7")
    for master in ("local", "local[2]", "local[*]"):
        sc = FakeSparkContext(master, same)
        probe_executors(sc)
        assert sc.jobs == 0
    sc = FakeSparkContext("spark://h:7077", same)
    probe_executors(sc)
    probe_executors(sc)
    assert sc.jobs == 1


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        (
            "Traceback...\n  File x\nModuleNotFoundError: No module named 'dstream'\n\tat org...",
            "ModuleNotFoundError: No module named 'dstream'",
        ),
        (
            "java.lang.NullPointerException\n\tat java.net.UnixDomainSocketAddress.of(...)",
            "its Python workers did not start (spark.python.daemon.module=dstream.tasks.daemon",
        ),
    ],
)
def test_executors_that_cannot_import_dstream_are_named_with_the_fix(
    error: str, cause: str
) -> None:
    from dstream.versions import ExecutorEnvironmentError, probe_executors

    sc = FakeSparkContext("spark://h:7077", error=error)
    sc.pythonExec = "/usr/bin/python3"
    with pytest.raises(ExecutorEnvironmentError) as refused:
        probe_executors(sc)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith("the executors' Python (/usr/bin/python3) cannot run dstream")
    assert cause in message
    assert "PYSPARK_PYTHON" in message and "--py-files" in message and "--archives" in message


def test_executors_with_other_versions_are_refused_naming_both() -> None:
    from dstream.versions import ExecutorEnvironmentError, probe_executors

    sc = FakeSparkContext("yarn", ("0.0.9", "4.3.0", "/opt/py/bin/python", "3.10.13"))
    with pytest.raises(ExecutorEnvironmentError, match=r"\(/opt/py/bin/python, Python 3.10.13\) "
                       r"runs dstream 0.0.9 and pyspark 4.3.0, the driver dstream"):  # fmt: skip
        probe_executors(sc)


def test_local_workers_default_to_the_drivers_python(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from dstream.versions import default_workers_python

    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    local, remote = FakeSparkContext("local[2]"), FakeSparkContext("spark://h:7077")
    assert default_workers_python(local) and local.pythonExec == sys.executable
    assert not default_workers_python(remote) and remote.pythonExec == "python3"
    monkeypatch.setenv("PYSPARK_PYTHON", "/chosen/python")
    chosen = FakeSparkContext("local[2]")
    assert not default_workers_python(chosen) and chosen.pythonExec == "python3"


def test_the_probe_runs_on_an_executor_without_dstream_and_says_so(tmp_path: Path) -> None:
    """The probe's task is shipped by value: a Python that cannot import dstream runs it and
    reports why (the task does not fail, so Spark logs no failed attempts first)."""
    import glob
    import os
    import subprocess
    import sys

    import pyspark
    from pyspark import cloudpickle

    from dstream.versions import _by_value, _executor_versions

    shipped = cloudpickle.dumps(_by_value(_executor_versions))
    lib = os.path.join(os.path.dirname(pyspark.__file__), "python", "lib")
    run = "import pickle, sys; f = pickle.loads(sys.stdin.buffer.read()); print(list(f([0])))"
    done = subprocess.run(
        [sys.executable, "-S", "-c", run],  # -S: no site-packages, so no dstream
        input=shipped,
        capture_output=True,
        env={"PYTHONPATH": ":".join(glob.glob(f"{lib}/*.zip"))},  # a Spark worker's path
        cwd=tmp_path,  # not the checkout, whose dstream/ -c would import
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert "(None, \"ModuleNotFoundError: No module named 'dstream'\"" in done.stdout.decode()


def test_an_executor_without_dstream_is_refused_in_one_line() -> None:
    from dstream.versions import ExecutorEnvironmentError, probe_executors

    why = "ModuleNotFoundError: No module named 'dstream'"
    sc = FakeSparkContext("spark://h:7077", (None, why, "/usr/bin/python3.11", "3.11.7"))
    with pytest.raises(ExecutorEnvironmentError) as refused:
        probe_executors(sc)
    message = str(refused.value)
    assert "\n" not in message and sc.jobs == 1
    assert message.startswith(  # the Python configured (pyspark's default), and what it ran
        "the executors' Python (python3 -> /usr/bin/python3.11, Python 3.11.7) cannot run "
        f"dstream's tasks: {why}; give the executors a Python with the same dstream and pyspark"
    )
