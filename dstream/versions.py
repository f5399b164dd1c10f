"""Which versions dstream runs with, and the one clear error outside them.

The distribution is ``pyspark-dstream`` (the import name is ``dstream``). Its JVM shim is
compiled against the jars of one pyspark line (:data:`PYSPARK_LINE`), and the suite runs on
that line only, so a StreamingContext refuses any other pyspark before it starts anything.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from dstream.jvm import live_conf

__all__ = [
    "DISTRIBUTION",
    "PYSPARK_LINE",
    "ExecutorEnvironmentError",
    "UnsupportedPySparkError",
    "check_pyspark",
    "default_workers_python",
    "describe",
    "probe_executors",
]

DISTRIBUTION = "pyspark-dstream"
PYSPARK_LINE = (4, 3)  # pyproject.toml: pyspark>=4.3.0,<4.4


class UnsupportedPySparkError(ImportError):
    """The pyspark this Python imports is not of :data:`PYSPARK_LINE`."""


def _line(version: str) -> tuple[int, int] | None:
    parts = version.split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return None


def check_pyspark(version: str) -> None:
    """Raise :class:`UnsupportedPySparkError` unless ``version`` (``pyspark.__version__``) is
    of the 4.3 line; a development build of it (``4.3.1.dev0``) is accepted."""
    if _line(version) == PYSPARK_LINE:
        return
    want = ".".join(map(str, PYSPARK_LINE))
    raise UnsupportedPySparkError(
        f"dstream runs on pyspark {want}.x, and this Python imports pyspark {version}: its JVM "
        f"shim is built against {want}'s jars; install a {want} pyspark "
        f"(`pip install 'pyspark>={want}.0,<{PYSPARK_LINE[0]}.{PYSPARK_LINE[1] + 1}'`), or on a "
        f"platform that ships its own Spark, a {DISTRIBUTION} release made for that Spark"
    )


def describe() -> str:
    """What ``dstream --version`` prints: dstream's, pyspark's and Python's versions."""
    from dstream import __version__

    try:
        from importlib.metadata import version

        pyspark = version("pyspark")
    except Exception:  # a pyspark on PYTHONPATH, not installed as a distribution
        try:
            import pyspark as module

            pyspark = str(module.__version__)
        except ImportError:
            pyspark = "not installed"
    return (
        f"{DISTRIBUTION} {__version__} (import dstream), pyspark {pyspark}, "
        f"Python {platform.python_version()}"
    )


class ExecutorEnvironmentError(RuntimeError):
    """The executors' Python cannot run dstream's tasks, or runs other versions than the
    driver's."""


_FIXES = (
    "give the executors a Python with the same dstream and pyspark: PYSPARK_PYTHON (or "
    "--conf spark.pyspark.python=PATH) naming one installed on every node, dstream shipped "
    "with --py-files (a zip of the dstream package), or a packed virtual environment with "
    "--archives env.tar.gz#env and PYSPARK_PYTHON=./env/bin/python"
)


def default_workers_python(sc: Any) -> bool:
    """Under a ``local`` master (executors on this machine), Python workers that no one chose
    run the driver's own Python, not the first ``python3`` on PATH: a program started as
    ``venv/bin/python prog.py`` without activating the venv otherwise gets workers that cannot
    import pyspark or dstream. True if changed."""
    master = str(sc.master or "")
    if not master.startswith("local"):
        return False
    if os.environ.get("PYSPARK_PYTHON") or live_conf(sc).get("spark.pyspark.python"):
        return False
    if sc.pythonExec != "python3":  # pyspark's own default
        return False
    sc.pythonExec = sys.executable
    return True


def _executor_versions(_: Iterable[int]) -> Iterator[tuple[str | None, str, str, str]]:
    """On an executor: dstream's and pyspark's versions there, or (None, why) when dstream
    cannot be imported. Shipped by value (:func:`_by_value`), so it runs where dstream is
    missing and says so, instead of failing the task."""
    import platform
    import sys

    try:
        import pyspark

        from dstream import __version__
    except ImportError as exc:
        yield None, f"{type(exc).__name__}: {exc}", sys.executable, platform.python_version()
        return
    yield __version__, str(pyspark.__version__), sys.executable, platform.python_version()


def _by_value(fn: Any) -> Any:
    """``fn``'s code as a function of no importable module, with only the builtins as its
    globals: cloudpickle then ships its code (by value) instead of a reference to this
    module, which an executor without dstream could not load. (Shipped by reference, the
    probe failed every attempt of its task on such an executor, and Spark logged each
    attempt's traceback, ~180 lines, before the one-line error.)"""
    import builtins
    import types

    module = {"__builtins__": builtins, "__name__": "dstream-executor-probe"}
    return types.FunctionType(fn.__code__, module, fn.__name__)


def probe_executors(sc: Any) -> None:
    """Once per SparkContext whose executors may run elsewhere (any master but ``local``):
    a one-task job checks that the executors' Python imports the driver's dstream and
    pyspark, and raises :class:`ExecutorEnvironmentError` in one line naming the Python, the
    versions and the fix if not. The task itself does not fail when dstream is missing
    there, so Spark logs no task failure before that line."""
    master = str(sc.master or "")
    if master == "local" or master.startswith("local[") or getattr(sc, _PROBED, False):
        return
    import pyspark

    from dstream import __version__

    python = live_conf(sc).get("spark.pyspark.python") or sc.pythonExec
    try:
        found = sc.parallelize([0], 1).mapPartitions(_by_value(_executor_versions)).collect()
    except Exception as exc:
        raise ExecutorEnvironmentError(
            f"the executors' Python ({python}) cannot run dstream's tasks: {_cause(str(exc))}; "
            + _FIXES
        ) from None
    version, spark, executable, py = found[0]
    if version is None:
        # The Python configured (what to change) and, if it is a wrapper, what it ran.
        ran = "" if executable == python else f" -> {executable}"
        raise ExecutorEnvironmentError(
            f"the executors' Python ({python}{ran}, Python {py}) cannot run dstream's tasks: "
            f"{spark}; " + _FIXES
        )
    mine = (__version__, str(pyspark.__version__))
    if (version, spark) != mine:
        raise ExecutorEnvironmentError(
            f"the executors' Python ({executable}, Python {py}) runs dstream {version} and "
            f"pyspark {spark}, the driver dstream {mine[0]} and pyspark {mine[1]}: state "
            "rebuilt from lineage must run the same code everywhere; " + _FIXES
        )
    setattr(sc, _PROBED, True)


_PROBED = "_dstream_executors_checked"


def _cause(error: str) -> str:
    """The line of a failed job's error that says why, e.g. "No module named 'dstream'"."""
    for raw in error.splitlines():
        line = raw.strip()
        if line.startswith(("ModuleNotFoundError:", "ImportError:")):
            return line
    if "UnixDomainSocketAddress" in error or "daemon" in error.lower():
        return (
            "its Python workers did not start (spark.python.daemon.module="
            f"{DAEMON_MODULE} is imported from dstream, which that Python lacks)"
        )
    first = next((ln.strip() for ln in error.splitlines() if ln.strip()), error)
    return first[:300]


DAEMON_MODULE = "dstream.tasks.daemon"
