"""The executor monitor inside a StreamingContext: it loads the JVM shim itself, counts each
interval's tasks, explains when it cannot run, and refuses avoidance where there is no
executor to avoid."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from dstream import ContextStateError, Time, jvm
from dstream.scheduler import shim
from dstream.scheduler.engine import engine_of
from dstream.settings import AvoidancePolicy, ElasticPolicy, StreamingSettings

from .conftest import Harness


def test_each_intervals_tasks_are_counted(harness: Any) -> None:
    h: Harness = harness()
    sc = h.ssc.sparkContext
    h.ssc.queueStream([sc.parallelize(range(10), 3), sc.parallelize(range(4), 2)]).map(
        lambda x: (x % 2, x)
    ).reduceByKey(lambda a, b: a + b).foreachRDD(lambda rdd: rdd.collect())
    h.ssc.start()
    h.run_batches(2)
    monitor = h.ssc.executor_monitor
    monitor.poll_now()
    first, second = monitor.tasks_of(Time(1000)), monitor.tasks_of(Time(2000))
    assert first is not None and second is not None
    # 3 map tasks + 2 reduce tasks (default parallelism 2), then 2 + 2.
    assert (first.tasks, second.tasks) == (5, 4)
    assert first.failed == 0 and first.speculative == 0
    assert first.executors == {"driver"}  # local[2]: tasks run in the driver JVM


def test_avoidance_is_refused_where_tasks_run_in_the_driver(harness: Any) -> None:
    h: Harness = harness(settings=StreamingSettings(executor_avoidance=AvoidancePolicy()))
    h.ssc.queueStream([[1]]).pprint()
    with pytest.raises(
        ValueError,
        match=r"executor_avoidance needs executors in JVMs of their own, but the master is 'local\[2\]'",
    ):
        h.ssc.start()


def test_the_elastic_policy_is_refused_where_tasks_run_in_the_driver(harness: Any) -> None:
    h: Harness = harness(settings=StreamingSettings(elastic=ElasticPolicy()))
    h.ssc.queueStream([[1]]).pprint()
    with pytest.raises(ValueError, match=r"elastic needs executors in JVMs of their own"):
        h.ssc.start()
    assert engine_of(h.ssc).state == "stopped"  # the failed start undid itself


def test_the_elastic_policy_is_refused_beside_dynamic_allocation(harness: Any) -> None:
    h: Harness = harness(settings=StreamingSettings(elastic=ElasticPolicy()))
    h.ssc.queueStream([[1]]).pprint()
    live_conf = h.ssc.sparkContext._jsc.sc().conf()  # the running context's own conf
    live_conf.set("spark.dynamicAllocation.enabled", "true")
    try:
        with pytest.raises(ValueError, match=r"spark.dynamicAllocation.enabled=false, or"):
            h.ssc.start()
    finally:
        live_conf.remove("spark.dynamicAllocation.enabled")


def test_without_the_shim_the_program_runs_and_says_what_is_missing(
    harness: Any, monkeypatch: Any, tmp_path: Path, caplog: Any
) -> None:
    missing = tmp_path / "dstream-shim.jar"
    for module in (shim, jvm):  # the feed's names, and the loader's own (dstream.jvm)
        monkeypatch.setattr(module, "SHIM_JAR", missing)
        monkeypatch.setattr(module, "class_on_classpath", lambda sc: False)
    monkeypatch.setattr(jvm, "_loaded", {})
    h: Harness = harness()
    seen: list[list[int]] = []
    h.ssc.queueStream([[1, 2]]).foreachRDD(lambda rdd: seen.append(rdd.collect()))
    with caplog.at_level(logging.WARNING, logger="dstream.scheduler.controllers"):
        h.ssc.start()
    assert f"dstream JVM shim jar not found at {missing}" in caplog.text
    assert "build it with `make shim`" in caplog.text
    assert "without the Spark UI's Streaming tab and dstream's metrics" in caplog.text
    assert engine_of(h.ssc).web_ui is None
    h.run_batches(1)
    assert seen == [[1, 2]]
    with pytest.raises(ContextStateError, match="built \\(`make shim`\\)"):
        h.ssc.executor_monitor  # noqa: B018


def test_the_shim_error_names_who_needs_it() -> None:
    error = shim.ShimMissingError(
        Path("/x/dstream-shim.jar"), needed_by="settings.executor_avoidance"
    )
    assert str(error) == (
        "dstream JVM shim jar not found at /x/dstream-shim.jar (settings.executor_avoidance "
        "needs it). In a source checkout build it with `make shim` (or `bash "
        "jvm-shim/build.sh`); an installed dstream ships it in its wheel unless the wheel was "
        "built with DSTREAM_BUILD_WITHOUT_SHIM=1: reinstall from a wheel built with a JDK 17+"
    )
