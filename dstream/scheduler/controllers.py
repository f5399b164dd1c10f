"""The controllers the engine starts around its scheduler, each when the program's settings
ask for it: the executor monitor (the JVM shim's task events: task statistics, stragglers,
executor avoidance), backpressure and the elastic policy, and the recovery episodes
(tentative outputs, the replica budget). Called by :meth:`Engine.start
<dstream.scheduler.engine.Engine>`, which keeps what they return."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from dstream.jvm import SHIM_JAR, live_conf
from dstream.scheduler.elastic import ElasticController
from dstream.scheduler.monitor import (
    ExecutorMonitor,
    SparkExecutorControl,
    supports_executor_control,
)
from dstream.scheduler.recovery_episodes import TentativeController
from dstream.scheduler.shim import ShimMissingError, TaskEventFeed
from dstream.sparkconf import conf_flag, conf_number

if TYPE_CHECKING:
    from dstream.scheduler.engine import Engine
    from dstream.scheduler.scheduler import JobScheduler

__all__ = ["start_elastic", "start_monitor", "start_recovery_episodes"]

log = logging.getLogger(__name__)


def start_monitor(engine: Engine) -> ExecutorMonitor | None:
    """The JVM shim's task events, read by the executor monitor (per-interval task
    statistics, stragglers, executor avoidance)."""
    policy = engine.settings.executor_avoidance
    controls = [
        name
        for name, value in (
            ("executor_avoidance", policy),
            ("elastic", engine.settings.elastic),
        )
        if value is not None
    ]
    if engine.settings.elastic is not None and conf_flag(
        live_conf(engine.sc), "spark.dynamicAllocation.enabled"
    ):
        raise ValueError(
            "settings.elastic decides the executors, and so does Spark's dynamic "
            "allocation (spark.dynamicAllocation.enabled=true): two controllers would "
            "undo each other; set spark.dynamicAllocation.enabled=false, or elastic=None "
            "(Spark then decides, and stream.rescale(n) still changes a state's partitions)"
        )
    for name in controls:
        if not supports_executor_control(engine.sc.master or ""):
            raise ValueError(
                f"settings.{name} needs executors in JVMs of their own, but the "
                f"master is {engine.sc.master!r} (tasks run inside the driver); use "
                f"local-cluster[N,cores,MB] or a cluster, or set {name}=None"
            )
    try:
        feed = TaskEventFeed.attach(engine.sc)
    except ShimMissingError as exc:
        if controls:
            raise ShimMissingError(exc.path, needed_by=f"settings.{controls[0]}") from None
        log.warning(
            "%s. Running without per-interval task statistics and straggler tracking, "
            "and without the Spark UI's Streaming tab and dstream's metrics.",
            exc,
        )
        return None
    monitor = ExecutorMonitor(
        feed,
        engine.job_group_prefix,
        policy=policy,
        control=SparkExecutorControl(engine.sc) if controls else None,
    )
    monitor.start()
    return monitor


def start_elastic(engine: Engine) -> None:
    """Backpressure and the elastic policy (dstream.scheduler.elastic), a listener on
    completed intervals; pyspark.streaming's spark.streaming.backpressure.* settings
    turn backpressure on too."""
    conf = live_conf(engine.sc)
    backpressure = engine.settings.backpressure or conf_flag(
        conf, "spark.streaming.backpressure.enabled"
    )
    if not backpressure and engine.settings.elastic is None:
        return
    min_rate = conf_number(conf, "spark.streaming.backpressure.pid.minRate", 100.0)
    if backpressure and conf.get("spark.streaming.backpressure.initialRate") is not None:
        initial = conf_number(conf, "spark.streaming.backpressure.initialRate", 1.0)
        for source in engine.graph.inputs:
            source.set_rate_limit(initial)
    controller = ElasticController(
        engine.graph,
        engine.monitor,
        engine.settings.elastic,
        backpressure=backpressure,
        min_rate=min_rate,
        checkpointer=engine.checkpointer,
    )
    # First: progress records show the rate and the step of their own interval.
    engine.bus.add(controller, first=True)


def start_recovery_episodes(engine: Engine, scheduler: JobScheduler) -> TentativeController | None:
    """Tentative results and the replica budget (dstream.scheduler.recovery_episodes), when an
    output gives tentative results or replica_budget_mb is set."""
    graph = engine.graph
    wanted = any(o.gives_tentative for o in graph.outputs)
    if not wanted and engine.settings.replica_budget_mb <= 0:
        return None
    what = "tentative outputs" if wanted else "settings.replica_budget_mb"
    if engine.monitor is None:
        raise ShimMissingError(SHIM_JAR, needed_by=what)
    monitor = engine.monitor
    controller = TentativeController(graph, engine.services, capacity=lambda: monitor.capacity)
    scheduler.attach_tentative(controller)
    engine.monitor.on_executor_removed(controller.executor_lost)
    controller.start(scheduler)
    return controller
