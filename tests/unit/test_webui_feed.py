"""The Streaming tab's feed with a stand-in context, monitor and JVM handle (no Spark): what it
pushes when a batch completes, when the executor monitor learns more about a recent batch,
and when the context stops."""

from __future__ import annotations

import json
import threading
from types import SimpleNamespace
from typing import Any

from dstream.clock import ManualClock
from dstream.listener import BatchInfo, OutputOperationInfo, StreamingListenerBatchCompleted
from dstream.scheduler.jobs import job_description
from dstream.scheduler.monitor import IntervalTasks
from dstream.scheduler.webui import StreamingTabFeed
from dstream.time import Duration, Time, human_time


class Handle:
    """Records what the feed sends the JVM."""

    def __init__(self) -> None:
        self.pushes: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
        self.stopped: dict[str, Any] | None = None

    def push(self, context: str, batches: str) -> None:
        self.pushes.append((json.loads(context), json.loads(batches)))

    def stop(self, context: str) -> None:
        self.stopped = json.loads(context)


class Monitor:
    def __init__(self) -> None:
        self.intervals: dict[int, IntervalTasks] = {}
        self.polls = 0

    def poll_now(self) -> None:
        self.polls += 1

    def tasks_of(self, time: Time) -> IntervalTasks | None:
        return self.intervals.get(time.ms)

    live_executors = {"driver": "host"}
    avoided_executors: dict[str, str | None] = {}
    actions: list[Any] = []


def progress(ms: int, rows: int) -> dict[str, Any]:
    return {
        "batchTime": human_time(ms),
        "batchId": ms,
        "numInputRows": rows,
        "failed": False,
        "stateOperators": [],
        "outputs": [
            {"name": "foreachRDD at app.py:3", "durationMs": 5, "attempts": 1, "failure": None}
        ],
    }


def feed_for(records: dict[int, dict[str, Any]]) -> tuple[StreamingTabFeed, Handle, Monitor, Any]:
    clock = ManualClock(500)
    engine = SimpleNamespace(
        clock=clock,
        id=3,
        job_group_prefix="dstream-app-3",
        batch_duration=Duration(1000),
        sc=SimpleNamespace(appName="app"),
        progress=SimpleNamespace(last=None),
        scheduler=None,  # no running batches to show
    )
    monitor = Monitor()
    feed = StreamingTabFeed(engine, monitor)  # type: ignore[arg-type]
    handle = Handle()
    feed._handle = handle

    def complete(ms: int) -> None:
        engine.progress.last = records[ms]
        op = OutputOperationInfo(Time(ms), 0, "foreachRDD at app.py:3", 10, 15)
        info = BatchInfo(Time(ms), ms, ms + 1, ms + 6, {0: 2}, (op,))
        feed.onBatchCompleted(StreamingListenerBatchCompleted(info))

    return feed, handle, monitor, complete


def test_a_completed_batch_is_pushed_with_its_context() -> None:
    _, handle, monitor, complete = feed_for({1000: progress(1000, 2)})
    monitor.intervals[1000] = IntervalTasks(tasks=2, executors={"driver"})
    complete(1000)
    assert monitor.polls == 1  # the latest task events first
    ((context, batches),) = handle.pushes
    assert context["key"] == "3" and context["status"] == "running"
    assert context["startedAt"] == human_time(500)
    assert context["totals"] == {"batches": 1, "failedBatches": 0, "inputRows": 2}
    (doc,) = batches
    assert doc["batchId"] == 1000 and doc["jobGroup"] == "dstream-app-3-1000"
    assert doc["outputs"][0]["jobDescription"] == job_description(
        Time(1000), 0, "foreachRDD at app.py:3"
    )
    assert doc["tasks"]["tasks"] == 2 and doc["tasks"]["stragglers"] == []


def test_what_the_monitor_learns_later_is_pushed_again_once() -> None:
    feed, handle, monitor, complete = feed_for({1000: progress(1000, 2), 2000: progress(2000, 4)})
    complete(1000)
    complete(2000)
    assert [[b["batchId"] for b in batches] for _, batches in handle.pushes] == [[1000], [2000]]
    assert handle.pushes[-1][1][0]["tasks"] is None  # no task event seen yet
    feed._push(only_changes=True)  # the refresher: nothing new, nothing sent
    assert len(handle.pushes) == 2
    monitor.intervals[1000] = IntervalTasks(tasks=3, executors={"1"}, stragglers={"1"})
    feed._push(only_changes=True)
    ((_, batches),) = handle.pushes[2:]
    assert [b["batchId"] for b in batches] == [1000]
    assert batches[0]["tasks"]["stragglers"] == ["1"]
    assert batches[0]["numInputRows"] == 2  # the whole document, as first pushed
    feed._push(only_changes=True)
    assert len(handle.pushes) == 3


def test_stop_pushes_the_last_changes_and_marks_the_context_stopped() -> None:
    feed, handle, monitor, complete = feed_for({1000: progress(1000, 2)})
    complete(1000)
    monitor.intervals[1000] = IntervalTasks(tasks=1, executors={"driver"})
    feed._engine.clock.advance(4000)
    feed.stop()
    assert handle.pushes[-1][1][0]["tasks"]["tasks"] == 1
    assert handle.stopped is not None
    assert handle.stopped["status"] == "stopped"
    assert handle.stopped["stoppedAt"] == human_time(4500)
    assert handle.stopped["totals"]["batches"] == 1


def test_the_refresher_ends_quietly_when_the_spark_context_stopped_first() -> None:
    feed, handle, _, complete = feed_for({1000: progress(1000, 2)})
    complete(1000)

    def gone() -> str:
        raise AttributeError("'NoneType' object has no attribute 'sc'")  # as PySpark's

    feed._engine.sc._jsc = None  # what SparkContext.stop() leaves
    feed._context_document = lambda **_: gone()  # type: ignore[method-assign]
    escaped: list[BaseException | None] = []
    hook = threading.excepthook
    threading.excepthook = lambda args: escaped.append(args.exc_value)
    try:
        feed.start_refreshing(every_s=0.001)
        assert feed._refresher is not None
        feed._refresher.join(30)
    finally:
        threading.excepthook = hook
    assert not feed._refresher.is_alive()
    assert escaped == []  # it returned: no exception escaped the thread
    assert feed._failures == 0 and len(handle.pushes) == 1
