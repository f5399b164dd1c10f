"""The Streaming tab of the application's Spark UI, and dstream's gauges in Spark's metrics
system: what the driver pushes to the JVM shim for them.

When a StreamingContext starts (with the JVM shim), :func:`attach_web_ui` hands the shim's
``io.dstream.shim.ui.StreamingUI`` a *context document*; the shim adds a "Streaming" tab to
the SparkContext's web UI (``/dstream/``, same server, port and filters as Spark's own tabs)
and registers a metrics source ``dstream.<context id>`` with the driver's metrics system.
Then, on the listener thread, every completed batch pushes one *batch document* (with the
context document, one Py4J call); the shim only lays out what it gets. When the context stops
its last context document says so: the tab shows it as stopped and its metrics go.

This module is the one definition of the documents (``FORMAT_VERSION``)::

    context: {"formatVersion": 1, "key": "0", "id": "dstream-<app id>-0", "name": "<app name>",
              "batchDurationMs": 1000, "startedAt": "2026-11-26 17:16:57.000",
              "status": "running" | "stopped", "stoppedAt": null | "...",
              "totals": {"batches": 12, "failedBatches": 0, "inputRows": 24000},
              "activeBatches": [{"batchId": 1795713418000, "batchTime": "...",
                                 "status": "queued" | "processing", "submittedAt": "...",
                                 "outputsDone": 0, "outputsTotal": 2}],
              "notGenerated": 0 (due intervals held back by max_backlog),
              "executorMonitor": {"live": {"<executor>": "<host>"},
                                  "avoided": [{"executor": "1", "host": "h1"}],
                                  "actions": [{"kind": "avoid", "executor": "1", "host": "h1",
                                               "at": "2026-...", "target": 2}]}}
    batch:   the batch's progress record (dstream.scheduler.progress), and
             "jobGroup": the Spark job group of its output jobs,
             "outputs"[i]["jobDescription"]: the Spark job description of that output's jobs
                 (the shim finds the jobs in Spark's status store by these two, so its links
                 point at jobs the UI has),
             "stateOperators"[i]["metricName"], ["checkpointAgeMs"] (batch time minus the
                 last checkpoint's, null before the first),
             "tasks": {"tasks", "speculative", "failed", "executors", "stragglers"} (the
                 executor monitor's count for the batch; null if it has none)

A batch's stragglers and tasks can be learnt after it completed (the JVM's listener bus runs
behind), so the executor monitor's record of the last ``REPUSH_BATCHES`` batches is read
again at every push, and every ``REFRESH_S`` seconds, and a batch is pushed again when it
changed. The builders are pure functions, tested without Spark.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from dstream.jvm import live_conf
from dstream.listener import BatchInfo, StreamingListener
from dstream.scheduler.jobs import job_description, job_group
from dstream.scheduler.progress import progress_record
from dstream.time import Time, human_time

if TYPE_CHECKING:
    from dstream.scheduler.engine import Engine
    from dstream.scheduler.monitor import ExecutorAction, ExecutorMonitor, IntervalTasks

__all__ = [
    "FORMAT_VERSION",
    "UI_CLASS",
    "StreamingTabFeed",
    "Totals",
    "attach_web_ui",
    "batch_document",
    "context_document",
    "monitor_document",
    "state_metric_names",
    "tasks_document",
]

log = logging.getLogger(__name__)

#: ``io.dstream.shim.ui.StreamingUI.FORMAT_VERSION`` of the documents built here.
FORMAT_VERSION: Final = 1
UI_CLASS: Final = "io.dstream.shim.ui.StreamingUI"
#: Batches rebuilt (and pushed again if changed) at every push.
REPUSH_BATCHES: Final = 10
#: Seconds between refreshes of the recent batches (pushed only when they changed).
REFRESH_S: Final = 1.0


# ----------------------------------------------------------------------------- the documents


@dataclass
class Totals:
    """Completed and failed batches and input records since the context started."""

    batches: int = 0
    failed_batches: int = 0
    input_rows: int = 0

    def add(self, record: dict[str, Any]) -> None:
        self.batches += 1
        self.failed_batches += bool(record.get("failed"))
        self.input_rows += int(record.get("numInputRows") or 0)


def state_metric_names(names: Iterable[str]) -> list[str]:
    """Metric-name parts for state streams named ``names``, in order: characters other than
    letters, digits, ``_`` and ``-`` become ``_``, and a name already taken gets ``_2``,
    ``_3``... (two streams never share a gauge)."""
    taken: set[str] = set()
    out = []
    for name in names:
        base = re.sub(r"[^A-Za-z0-9_-]", "_", name) or "state"
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            candidate = f"{base}_{n}"
        taken.add(candidate)
        out.append(candidate)
    return out


def tasks_document(tasks: IntervalTasks | None) -> dict[str, Any] | None:
    """What the executor monitor counted for one batch (None: it has no record of it)."""
    if tasks is None:
        return None
    return {
        "tasks": tasks.tasks,
        "speculative": tasks.speculative,
        "failed": tasks.failed,
        "executors": sorted(tasks.executors),
        "stragglers": sorted(tasks.stragglers),
    }


def batch_document(
    record: dict[str, Any],
    *,
    group: str,
    descriptions: Sequence[str],
    tasks: dict[str, Any] | None,
) -> dict[str, Any]:
    """The batch document: ``record`` (a progress record, not modified) with the batch's job
    group, each output's job description (``descriptions``, in the order of
    ``record["outputs"]``), each state's metric name and checkpoint age, and ``tasks``."""
    if len(descriptions) != len(record["outputs"]):
        raise ValueError(
            f"batch {record['batchTime']} has {len(record['outputs'])} output operations but "
            f"{len(descriptions)} job descriptions; give one per output operation"
        )
    doc = dict(record)
    doc["jobGroup"] = group
    doc["outputs"] = [
        {**output, "jobDescription": description}
        for output, description in zip(record["outputs"], descriptions, strict=True)
    ]
    states = record["stateOperators"]
    names = state_metric_names(str(s["name"]) for s in states)
    doc["stateOperators"] = [
        {
            **state,
            "metricName": name,
            "checkpointAgeMs": (
                None
                if state.get("lastCheckpointMs") is None
                else record["batchId"] - state["lastCheckpointMs"]
            ),
        }
        for state, name in zip(states, names, strict=True)
    ]
    doc["tasks"] = tasks
    return doc


def monitor_document(
    live: dict[str, str], avoided: dict[str, str | None], actions: Sequence[ExecutorAction]
) -> dict[str, Any]:
    """The executor monitor's findings: live executors (id -> host), the avoided ones, and
    every avoid/restore action (times as people read them)."""
    return {
        "live": dict(sorted(live.items())),
        "avoided": [{"executor": e, "host": h} for e, h in sorted(avoided.items())],
        "actions": [
            {
                "kind": f"{a.kind} ({a.reason})" if a.reason else a.kind,
                "executor": a.executor,
                "host": a.host,
                "at": human_time(a.at_ms),
                "target": a.target,
            }
            for a in actions
        ],
    }


def context_document(
    *,
    key: str,
    context_id: str,
    name: str,
    batch_ms: int,
    started_ms: int,
    totals: Totals,
    monitor: dict[str, Any] | None,
    stopped_ms: int | None = None,
    active: list[dict[str, Any]] | None = None,
    not_generated: int = 0,
) -> dict[str, Any]:
    """The context document (see the module docstring)."""
    return {
        "formatVersion": FORMAT_VERSION,
        "key": key,
        "id": context_id,
        "name": name,
        "batchDurationMs": batch_ms,
        "startedAt": human_time(started_ms),
        "status": "running" if stopped_ms is None else "stopped",
        "stoppedAt": human_time(stopped_ms),
        "totals": {
            "batches": totals.batches,
            "failedBatches": totals.failed_batches,
            "inputRows": totals.input_rows,
        },
        "executorMonitor": monitor,
        "activeBatches": active or [],
        "notGenerated": not_generated,
    }


# ------------------------------------------------------------------------------- the feed


def attach_web_ui(engine: Engine, monitor: ExecutorMonitor | None) -> StreamingTabFeed | None:
    """Adds ``engine``'s program to the Streaming tab and the metrics system, and registers
    the feed that keeps them current; None when the shim is missing (the executor monitor
    already said so: ``monitor`` is None then) or cannot show the tab (said here, once)."""
    if monitor is None:
        return None
    feed = StreamingTabFeed.attach(engine, monitor)
    if feed is not None:
        engine.bus.add(feed)
        feed.start_refreshing()
    return feed


class StreamingTabFeed(StreamingListener):
    """Pushes each completed batch of one StreamingContext to the shim (on the listener
    thread), refreshes the recent batches once a second while they change (task events reach
    the driver after their batch completed), and marks the context stopped at :meth:`stop`."""

    def __init__(self, engine: Engine, monitor: ExecutorMonitor) -> None:
        self._engine = engine
        self._handle: Any = None  # the JVM ContextStatus, set by attach()
        self._monitor = monitor
        self._started_ms = engine.clock.now().ms
        self._lock = threading.Lock()  # one push at a time; guards everything below
        self._totals = Totals()
        # batch ms -> (progress record, job descriptions): the batches rebuilt at each push
        self._recent: dict[int, tuple[dict[str, Any], list[str]]] = {}
        # batch ms -> its tasks document last pushed: the only part of a batch that changes
        self._pushed: dict[int, dict[str, Any] | None] = {}
        self._pushed_context: str | None = None
        self._failures = 0
        self._stopping = threading.Event()
        self._refresher: threading.Thread | None = None

    @classmethod
    def attach(cls, engine: Engine, monitor: ExecutorMonitor) -> StreamingTabFeed | None:
        from py4j.protocol import Py4JJavaError

        from dstream.jvm import SHIM_JAR, ShimMissingError, invoke_static, shim_class

        sc = engine.sc
        try:
            ui_class = shim_class(sc, UI_CLASS)
        except ShimMissingError:
            return None
        except Py4JJavaError:
            log.warning(
                "the dstream JVM shim (%s) has no Streaming tab: it was built before the tab "
                "was added. Rebuild it with `make shim` and restart the driver; running without "
                "the Streaming tab and dstream's metrics.",
                SHIM_JAR,
            )
            return None
        feed = cls(engine, monitor)
        try:
            feed._handle = invoke_static(
                sc,
                ui_class,
                "attach",
                ("org.apache.spark.SparkContext", sc._jsc.sc()),
                ("java.lang.String", json.dumps(feed._context_document())),
            )
        except Py4JJavaError as exc:
            cause = exc.java_exception.getCause()
            log.warning(
                "the Spark UI's Streaming tab could not be added: %s; running without it and "
                "without dstream's metrics",
                cause.getMessage() if cause is not None else exc,
            )
            return None
        if str(live_conf(sc).get("spark.ui.enabled", "true")).lower() == "false":
            log.info(
                "spark.ui.enabled is false: no Streaming tab; dstream's metrics are registered "
                "as source %s",
                feed._handle.sourceName(),
            )
        return feed

    # ---- the listener thread ------------------------------------------------------------------
    def onBatchCompleted(self, batchCompleted: Any) -> None:
        info: BatchInfo = batchCompleted.batchInfo()
        record = self._engine.progress.last
        if record is None or record["batchId"] != info.batch_time.ms:
            record = progress_record(self._engine, info)
        descriptions = [
            job_description(info.batch_time, op.index, op.label) for op in info.output_operations
        ]
        try:
            self._monitor.poll_now()  # the batch's last task events, if they arrived
        except Exception:
            log.debug("Streaming tab: executor monitor poll failed", exc_info=True)
        with self._lock:
            self._totals.add(record)
            self._recent[info.batch_time.ms] = (record, descriptions)
            for ms in sorted(self._recent)[:-REPUSH_BATCHES]:
                del self._recent[ms]
            self._push()

    # ---- lifecycle ------------------------------------------------------------------------------
    def start_refreshing(self, every_s: float = REFRESH_S) -> None:
        self._refresher = threading.Thread(
            target=self._refresh, args=(every_s,), name="dstream-streaming-tab", daemon=True
        )
        self._refresher.start()

    def stop(self) -> None:
        """The context stopped (its listener bus delivered every batch): push what changed
        and mark it stopped."""
        self._stopping.set()
        if self._refresher is not None:
            self._refresher.join()
        try:
            with self._lock:
                self._push()
                stopped = self._context_document(stopped_ms=self._engine.clock.now().ms)
                self._handle.stop(json.dumps(stopped))
        except Exception:  # the SparkContext was stopped first: its UI is gone anyway
            log.debug("Streaming tab: could not mark the context stopped", exc_info=True)

    def _refresh(self, every_s: float) -> None:
        while not self._stopping.wait(every_s):
            try:
                with self._lock:
                    self._push(only_changes=True)
            except Exception:
                if getattr(self._engine.sc, "_jsc", True) is None:
                    return  # the SparkContext was stopped before this context: no UI to feed
                self._failures += 1
                if self._failures == 1:
                    log.warning("Streaming tab: refreshing it failed", exc_info=True)

    # ---- helpers ------------------------------------------------------------------------------
    def _push(self, only_changes: bool = False) -> None:
        """Pushes the context document and the recent batches that are new or whose task
        counts changed (with ``only_changes``: nothing if nothing changed). Holds ``_lock``."""
        docs = []
        for ms in sorted(self._recent):
            tasks = tasks_document(self._monitor.tasks_of(Time(ms)))
            if ms not in self._pushed or self._pushed[ms] != tasks:
                docs.append(json.dumps(self._batch_document(ms, tasks)))
                self._pushed[ms] = tasks
        for ms in [ms for ms in self._pushed if ms not in self._recent]:
            del self._pushed[ms]
        context = json.dumps(self._context_document())
        if only_changes and not docs and context == self._pushed_context:
            return
        try:
            self._handle.push(context, "[" + ",".join(docs) + "]")
            self._pushed_context = context
        except Exception:
            self._failures += 1
            if self._failures == 1:
                log.warning("Streaming tab: pushing a batch to the JVM failed", exc_info=True)

    def _batch_document(self, ms: int, tasks: dict[str, Any] | None) -> dict[str, Any]:
        record, descriptions = self._recent[ms]
        return batch_document(
            record,
            group=job_group(self._engine.job_group_prefix, Time(ms)),
            descriptions=descriptions,
            tasks=tasks,
        )

    def _context_document(self, stopped_ms: int | None = None) -> dict[str, Any]:
        monitor = self._monitor
        scheduler = self._engine.scheduler
        active, not_generated = ([], 0) if scheduler is None or stopped_ms else scheduler.active()
        return context_document(
            key=str(self._engine.id),
            context_id=self._engine.job_group_prefix,
            name=self._engine.sc.appName or "",
            batch_ms=self._engine.batch_duration.ms,
            started_ms=self._started_ms,
            totals=self._totals,
            monitor=monitor_document(
                monitor.live_executors, monitor.avoided_executors, list(monitor.actions)
            ),
            stopped_ms=stopped_ms,
            active=active,
            not_generated=not_generated,
        )
