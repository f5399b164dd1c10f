"""dstream's Python worker daemon: PySpark's worker loop, with what a worker keeps frozen
after its first tasks (so the full collection PySpark runs between tasks stays short).
No Spark: PySpark's per-task ``worker`` is replaced by a stand-in."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from dstream.tasks import daemon


@pytest.fixture
def tasks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    ran: list[Any] = []

    def one_task(sock: Any, authenticated: bool) -> int:
        ran.append((sock, authenticated))
        return 0

    monkeypatch.setattr(daemon, "_pyspark_worker", one_task)
    monkeypatch.setattr(daemon, "_settling", iter(range(daemon.SETTLING_TASKS)))
    gc.unfreeze()
    yield ran
    gc.unfreeze()


def test_each_task_runs_pysparks_worker_and_returns_its_code(tasks: list[Any]) -> None:
    assert daemon.worker("sock", True) == 0  # type: ignore[arg-type]
    assert tasks == [("sock", True)]


def test_what_the_first_tasks_keep_is_frozen_and_later_tasks_add_nothing(
    tasks: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    freezes: list[int] = []
    real_freeze = gc.freeze

    def freeze() -> None:
        freezes.append(len(tasks))
        real_freeze()

    monkeypatch.setattr(daemon.gc, "freeze", freeze)
    frozen = []
    kept = []
    for _ in range(daemon.SETTLING_TASKS + 2):
        kept.append(object.__new__(type("Kept", (), {})))  # a tracked object a task keeps
        daemon.worker(None, False)  # type: ignore[arg-type]
        frozen.append(gc.get_freeze_count())
    # A freeze after each settling task, none after: exactly what the daemon does.
    assert freezes == list(range(1, daemon.SETTLING_TASKS + 1))
    settling = frozen[: daemon.SETTLING_TASKS]
    assert settling[0] > 0 and settling == sorted(settling) and len(set(settling)) == len(settling)
    # Settled: nothing more is frozen. (Other threads of this test process may free a frozen
    # object meanwhile, by reference counting: the count can only fall.)
    assert max(frozen[daemon.SETTLING_TASKS :]) <= settling[-1]
    assert len(tasks) == daemon.SETTLING_TASKS + 2


def test_the_recommended_conf_runs_this_daemon_where_executors_run_this_python() -> None:
    from dstream.sparkconf import recommended_settings

    key = "spark.python.daemon.module"
    for master in ("local[2]", "local-cluster[2,1,1024]"):
        assert recommended_settings(master)[key] == daemon.__name__
    # Executors elsewhere may lack dstream: only when asked (dstream on every node).
    assert key not in recommended_settings("spark://h:7077")
    assert recommended_settings("spark://h:7077", daemon=True)[key] == daemon.__name__
    assert key not in recommended_settings("local[2]", daemon=False)


def test_a_worker_forked_after_preload_imports_nothing_to_load_the_engines_tasks() -> None:
    """What the daemon imports before forking covers what loading a task's functions of
    this engine imports (PySpark's worker loop, the engine's task modules): in a fresh
    interpreter, after ``preload()``, unpickling them imports no module."""
    import subprocess
    import sys

    from pyspark import cloudpickle  # what PySpark ships a task's functions with

    from dstream.streams import copartitioned
    from dstream.tasks import arrow_text, state_merge, track_state

    modules = (copartitioned, state_merge, track_state, arrow_text)
    functions = [
        f
        for m in modules
        for f in vars(m).values()
        if callable(f) and getattr(f, "__module__", None) == m.__name__
    ]
    check = (
        "import sys, pickle; import dstream.tasks.daemon as d; d.preload(); "
        "before = set(sys.modules); pickle.loads(sys.stdin.buffer.read()); "
        "import pyspark.worker; print(sorted(set(sys.modules) - before))"
    )
    done = subprocess.run(
        [sys.executable, "-c", check],
        input=cloudpickle.dumps(functions),
        capture_output=True,
        check=True,
    )
    assert done.stdout.decode().strip() == "[]", done.stdout
