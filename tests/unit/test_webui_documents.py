"""The documents the driver pushes to the Streaming tab and the metrics source (pure, no Spark):
a batch document is its progress record plus what the tab needs to find jobs and name gauges."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dstream.scheduler.monitor import ExecutorAction, IntervalTasks
from dstream.scheduler.webui import (
    FORMAT_VERSION,
    Totals,
    batch_document,
    context_document,
    monitor_document,
    state_metric_names,
    tasks_document,
)
from dstream.time import human_time


def record(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "dstream-app-0",
        "name": "app",
        "batchTime": human_time(5000),
        "timestamp": "1970-01-01T00:00:05.000Z",
        "batchId": 5000,
        "numInputRows": 7,
        "inputRowsPerSecond": 7.0,
        "processedRowsPerSecond": 70.0,
        "durationMs": {"schedulingDelay": 3, "processing": 100, "totalDelay": 103},
        "backlog": 0,
        "failed": False,
        "sources": [{"description": "queueStream", "numInputRows": 7, "inputRowsPerSecond": 7.0}],
        "stateOperators": [
            {
                "name": "totals",
                "operator": "updateStateByKey at app.py:3",
                "lastCheckpoint": human_time(2000),
                "lastCheckpointMs": 2000,
                "lineageDepth": 3,
                "memoryUsedBytes": 512,
            },
            {
                "name": "updateStateByKey at app.py:9",
                "operator": "updateStateByKey at app.py:9",
                "lastCheckpoint": None,
                "lastCheckpointMs": None,
                "lineageDepth": 5,
                "memoryUsedBytes": None,
            },
        ],
        "outputs": [
            {"name": "foreachRDD at app.py:4", "durationMs": 60, "attempts": 1, "failure": None},
            {"name": "pprint at app.py:5", "durationMs": 40, "attempts": 3, "failure": "boom"},
        ],
    }
    base.update(changes)
    return base


def test_a_batch_document_adds_job_keys_state_gauges_and_tasks() -> None:
    rec = record()
    before = json.dumps(rec)
    tasks = IntervalTasks(tasks=6, speculative=1, failed=2, executors={"2", "1"}, stragglers={"2"})
    doc = batch_document(
        rec, group="dstream-app-0-5000", descriptions=["d0", "d1"], tasks=tasks_document(tasks)
    )
    assert json.dumps(rec) == before  # the progress record is not changed
    assert {
        k: v for k, v in doc.items() if k not in ("outputs", "stateOperators", "jobGroup", "tasks")
    } == {k: v for k, v in rec.items() if k not in ("outputs", "stateOperators")}
    assert doc["jobGroup"] == "dstream-app-0-5000"
    assert [o["jobDescription"] for o in doc["outputs"]] == ["d0", "d1"]
    assert [o["failure"] for o in doc["outputs"]] == [None, "boom"]
    first, second = doc["stateOperators"]
    assert first["metricName"] == "totals" and first["checkpointAgeMs"] == 3000
    assert second["metricName"] == "updateStateByKey_at_app_py_9"
    assert second["checkpointAgeMs"] is None  # never checkpointed
    assert doc["tasks"] == {
        "tasks": 6,
        "speculative": 1,
        "failed": 2,
        "executors": ["1", "2"],
        "stragglers": ["2"],
    }
    assert json.loads(json.dumps(doc)) == doc


def test_a_batch_without_monitor_record_has_no_tasks() -> None:
    doc = batch_document(record(), group="g", descriptions=["a", "b"], tasks=tasks_document(None))
    assert doc["tasks"] is None


def test_one_description_per_output_is_required() -> None:
    with pytest.raises(ValueError, match=r"has 2 output operations but 1 job descriptions"):
        batch_document(record(), group="g", descriptions=["only one"], tasks=None)


def test_state_metric_names_are_safe_and_unique() -> None:
    assert state_metric_names(["totals", "totals", "a.b c", "", "totals"]) == [
        "totals",
        "totals_2",
        "a_b_c",
        "state",
        "totals_3",
    ]


def test_the_context_document() -> None:
    totals = Totals()
    totals.add(record())
    totals.add(record(failed=True, numInputRows=3))
    monitor = monitor_document(
        {"2": "h2", "1": "h1"},
        {"3": "h3"},
        [ExecutorAction("avoid", "3", "h3", 7000, 2)],
    )
    doc = context_document(
        key="0",
        context_id="dstream-app-0",
        name="app",
        batch_ms=1000,
        started_ms=4000,
        totals=totals,
        monitor=monitor,
    )
    assert doc == {
        "formatVersion": FORMAT_VERSION,
        "key": "0",
        "id": "dstream-app-0",
        "name": "app",
        "batchDurationMs": 1000,
        "startedAt": human_time(4000),
        "status": "running",
        "stoppedAt": None,
        "totals": {"batches": 2, "failedBatches": 1, "inputRows": 10},
        "executorMonitor": {
            "live": {"1": "h1", "2": "h2"},
            "avoided": [{"executor": "3", "host": "h3"}],
            "actions": [
                {
                    "kind": "avoid",
                    "executor": "3",
                    "host": "h3",
                    "at": human_time(7000),
                    "target": 2,
                }
            ],
        },
        "activeBatches": [],
        "notGenerated": 0,
    }
    stopped = context_document(
        key="0",
        context_id="dstream-app-0",
        name="app",
        batch_ms=1000,
        started_ms=4000,
        totals=totals,
        monitor=None,
        stopped_ms=9000,
    )
    assert stopped["status"] == "stopped" and stopped["stoppedAt"] == human_time(9000)
    assert stopped["executorMonitor"] is None
