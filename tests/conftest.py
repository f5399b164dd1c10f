"""Shared fixtures: one local[2] SparkContext for the whole session.

Spark-backed tests never start their own context; they build a
StreamingContext over this one (``stop(stopSparkContext=False)``) and drive it
with a ManualClock.
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest
from hypothesis import settings

from testbed.kafka import KafkaBroker

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
# Every JVM the tests start (this session's driver, the drivers and executors of the fault
# runs, Kafka, HDFS, the standalone cluster) compiles with C1 only. They live seconds to
# minutes on two cores, where C2's compiler threads take CPU the test needs: a 10-interval
# executor-loss run takes 20 s with C2, 15 s without. bench/ runs keep the JVM's default.
os.environ.setdefault("JDK_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")

# Hypothesis fails an example that runs over 200 ms by default: a wall-clock assertion, which a
# loaded two-core machine breaks (test_kafka_ranges' largest example, 30,000 pieces, takes
# ~200 ms on its own; under a load average of 47 its test failed in tests/unit). The
# property tests assert what the code does, not how fast.
settings.register_profile("dstream", deadline=None)
settings.load_profile("dstream")


# `make test` runs two pytest workers (pytest-xdist). The fault runs, each with driver,
# executor, HDFS or Kafka processes of its own that run on the wall clock, take most of both
# cores: two at once take more than twice as long each (a chaos run 63 s alone, 228 s beside
# another), so one worker runs them one after another, first, while the other runs the rest
# (the session's local[2] context, a ManualClock); a worker that is done takes what is left
# of the rest. The tests under one service
# (Kafka's broker, HDFS's mini cluster) also share that service this way.
#
# This is a scheduler of our own (xdist's hook), not ``xdist_group`` marks: pytest 9 derives
# ``nodeid`` from a field that xdist 3.8's loadgroup no longer changes, so the marks were
# silently ignored and fault runs fell to either worker as they came (18:10 on one fresh
# clone, 12:30 on another).
#
# Fault runs paced by their own progress, not the wall clock, are a scope of their own
# instead: executor kills on a ManualClock (tests/cluster/test_executor_loss.py), where each
# interval waits for its jobs however busy the machine is, and a replay killed after its
# n-th interval (tests/recovery/test_replay_kill.py). They run beside the other worker's
# fault runs without changing what they prove, and that worker (done after 15:04 of 17:26
# on 2026-11-28) is no longer the whole suite's critical path.
FAULT_DIRS = ("recovery", "cluster", "hdfs", "kafka")
FAULTS = "faults"
CLOCK_FAULTS = (
    "cluster/test_executor_loss.py",
    "cluster/test_approximate.py",
    "recovery/test_replay_kill.py",
    "recovery/test_rescale_restart.py",
)
_TESTS = os.path.dirname(os.path.abspath(__file__))


def _is_fault_run(path: str) -> bool:
    return os.path.relpath(path, _TESTS).split(os.sep)[0] in FAULT_DIRS


def _scope_of(path: str) -> str | None:
    """The scheduling scope of a test file: FAULTS, its own path (clock-driven fault runs,
    one worker for the whole module), or None (a scope per test)."""
    relative = os.path.relpath(path, _TESTS).replace(os.sep, "/")
    if relative in CLOCK_FAULTS:
        return relative
    return FAULTS if _is_fault_run(path) else None


# The fault runs' worker. The others lower their own priority (and that of every process
# they start) by NICE_OTHERS: a fault run is paced by the wall clock, and every second it
# runs costs CPU (its intervals' jobs, its executors' heartbeats), so a fault run starved by
# the other worker's tests took twice as long and cost more CPU in all (the chaos run 63 s
# alone, 125 s beside the other worker at equal priority), while the other worker's tests are
# paced by their own progress and lose nothing by waiting. ``DSTREAM_TEST_NICE=0`` turns it
# off.
FAULT_WORKER = "gw0"
NICE_OTHERS = int(os.environ.get("DSTREAM_TEST_NICE", "10"))


def pytest_configure(config: pytest.Config) -> None:
    worker = getattr(config, "workerinput", {}).get("workerid")
    if worker is not None and worker != FAULT_WORKER and NICE_OTHERS > 0:
        os.nice(NICE_OTHERS)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    faults = [i for i in items if _is_fault_run(str(i.path))]
    chosen = set(map(id, faults))
    items[:] = faults + [i for i in items if id(i) not in chosen]


# Optional: the tiers that run without pytest-xdist (make test-pythons) load this file too.
@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class FaultRunsOnOneWorker(LoadScopeScheduling):
        """xdist's scope scheduling with one scope for every fault run, sent to the first
        worker (FAULT_WORKER, the one not niced), and a scope of its own for every other
        test."""

        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return _scope_of(os.path.join(os.path.dirname(_TESTS), path)) or nodeid

        def _assign_work_unit(self, node: Any) -> None:
            if FAULTS in self.workqueue:
                # The fault runs' worker takes them first; the others take them only when
                # nothing else is left (the fault worker gone).
                mine = node.gateway.id == FAULT_WORKER
                self.workqueue.move_to_end(FAULTS, last=not mine)
            super()._assign_work_unit(node)

    return FaultRunsOnOneWorker(config, log)


@pytest.fixture(scope="session")
def sc() -> Iterator[object]:
    from pyspark import SparkContext

    from dstream.sparkconf import recommended_conf

    conf = (
        recommended_conf("local[2]", "dstream-tests")
        .set("spark.ui.enabled", "false")
        .set("spark.default.parallelism", "2")
        .set("spark.driver.host", "127.0.0.1")
        .set("spark.driver.bindAddress", "127.0.0.1")
    )
    context = SparkContext(conf=conf)
    context.setLogLevel("ERROR")
    yield context
    context.stop()


@pytest.fixture
def hung_checkpoints(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """State checkpoint writes hang until the returned event is set, then go through (a
    slow or failing checkpoint store); set at the end of the test in any case."""
    from dstream.streams.state_base import StateStream

    gate = threading.Event()
    write = StateStream.checkpoint_now

    def hanging(self: StateStream, time: Any, rdd: Any) -> None:
        assert gate.wait(120), "the test never let the checkpoint through"
        write(self, time, rdd)

    monkeypatch.setattr(StateStream, "checkpoint_now", hanging)
    yield gate
    gate.set()


@pytest.fixture(autouse=True)
def _no_streaming_context_outlives_its_test() -> Iterator[None]:
    """A test that fails before its stop() would leave its context running: its scheduler
    and executor monitor (which drains the shared JVM shim) would disturb later tests."""
    yield
    from dstream import StreamingContext

    while (leaked := StreamingContext.getActive()) is not None:
        leaked.stop(stopSparkContext=False)


# ---- Services the fault runs share, each stopped once the tests that use it are done -----
class SharedServices:
    """HDFS's mini cluster and the standalone cluster, each started by the first test (of
    this pytest process) that asks for it and kept for the tests after it.

    A service is stopped as soon as the next test this process runs does not ask for it
    (nor comes from the same directory): the fault runs' worker runs each directory's tests
    together, then goes on to the others, and an idle NameNode with 2 DataNodes and Master
    with 3 Workers took 1.2 and 0.5 CPU-s a minute (measured alone) for the rest of the
    suite. A later test that asks again starts a new one.

    Not Kafka's broker (1.7 CPU-s a minute idle), which lives for the session: the session
    context's Python workers keep the Kafka sink's producers (one per process and settings,
    reused by every interval), and once the broker was gone they logged a refused
    connection at every reconnect until the end (17 lines in one CI log)."""

    def __init__(self) -> None:
        self._running: dict[str, tuple[AbstractContextManager[Any], Any]] = {}

    def get(self, name: str, start: Callable[[], AbstractContextManager[Any]]) -> Any:
        if name not in self._running:
            manager = start()
            self._running[name] = (manager, manager.__enter__())
        return self._running[name][1]

    def stop_unused(self, item: pytest.Item, nextitem: pytest.Item | None) -> None:
        for name in list(self._running):
            if nextitem is not None and (
                name in nextitem.fixturenames or nextitem.path.parent == item.path.parent
            ):
                continue
            self.stop(name)

    def stop(self, name: str) -> None:
        manager, _ = self._running.pop(name)
        manager.__exit__(None, None, None)

    def stop_all(self) -> None:
        for name in list(self._running):
            self.stop(name)


SERVICES = SharedServices()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    yield  # the test's own fixtures are torn down first
    SERVICES.stop_unused(item, nextitem)


def pytest_sessionfinish(session: pytest.Session) -> None:
    SERVICES.stop_all()


# ---- Kafka: one real broker (KRaft, loopback) for the whole session ---------------------
_topic_names = itertools.count()


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[KafkaBroker]:
    with KafkaBroker() as broker:
        yield broker


@pytest.fixture
def new_topic(kafka_broker: KafkaBroker) -> Callable[..., str]:
    """``new_topic(partitions=1, **config)`` creates a topic no other test uses."""

    def make(partitions: int = 1, **config: str) -> str:
        name = f"t{next(_topic_names)}-{partitions}"
        kafka_broker.create_topic(name, partitions, config)
        return name

    return make
