"""What the driver pushes to the JVM shim for the Spark UI's Streaming tab and Spark's metrics
system, checked in the JVM (the session's SparkContext has no UI; tests/browser opens the tab
itself in a browser)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from dstream.scheduler import webui
from dstream.scheduler.engine import engine_of

from .conftest import Harness


def source_gauges(ssc: Any) -> dict[str, Any] | None:
    """The gauges of the context's metrics source as the driver's metrics system has them
    (None: not registered)."""
    assert engine_of(ssc).web_ui is not None
    text = engine_of(ssc).web_ui._handle.registeredGauges()
    return None if text is None else dict(json.loads(text))


def test_every_batch_is_pushed_with_the_keys_of_its_jobs(harness: Any) -> None:
    h: Harness = harness()
    sc = h.ssc.sparkContext
    h.ssc.queueStream([[1, 2, 3], [4, 5]]).map(lambda x: (x % 2, x)).reduceByKey(
        lambda a, b: a + b
    ).foreachRDD(lambda rdd: rdd.collect())
    h.ssc.start()
    h.run_batches(2)
    engine_of(h.ssc).bus.wait_until_empty(60)
    feed = engine_of(h.ssc).web_ui
    assert feed is not None
    handle = feed._handle
    assert handle.retainedBatchCount() == 2
    progress = h.ssc.recentProgress
    for record in progress:
        doc = json.loads(handle.batchJson(record["batchId"]))
        assert {k: doc[k] for k in record if k != "outputs"} == {
            k: v for k, v in record.items() if k != "outputs"
        }
        assert doc["tasks"]["tasks"] >= 1 and doc["tasks"]["executors"] == ["driver"]
        # The keys the tab finds the batch's Spark jobs by are those Spark has.
        jobs = sc.statusTracker().getJobIdsForGroup(doc["jobGroup"])
        assert jobs
        (output,) = doc["outputs"]
        store = sc._jsc.sc().statusStore()
        assert {store.job(j).description().get() for j in jobs} == {output["jobDescription"]}


def test_the_metrics_source_reads_the_last_batch_and_goes_at_stop(harness: Any) -> None:
    h: Harness = harness()
    h.ssc.queueStream([[1, 2, 3], [4, 5]]).foreachRDD(lambda rdd: rdd.count())
    h.ssc.start()
    h.run_batches(2)
    engine_of(h.ssc).bus.wait_until_empty(60)
    assert engine_of(h.ssc).web_ui is not None
    assert engine_of(h.ssc).web_ui._handle.sourceName() == f"dstream.{engine_of(h.ssc).id}"
    gauges = source_gauges(h.ssc)
    assert gauges is not None
    last = h.ssc.lastProgress
    assert last is not None
    assert gauges["lastCompletedBatch.time"] == 2000
    assert gauges["lastCompletedBatch.inputRecords"] == 2
    assert gauges["lastCompletedBatch.processingTimeMs"] == last["durationMs"]["processing"]
    assert gauges["lastCompletedBatch.totalDelayMs"] == last["durationMs"]["totalDelay"]
    assert gauges["lastCompletedBatch.inputRate"] == 2.0
    assert gauges["totalCompletedBatches"] == 2 and gauges["totalInputRecords"] == 5
    assert gauges["totalFailedBatches"] == 0 and gauges["executors.avoided"] == 0
    h.ssc.stop(stopSparkContext=False)
    assert source_gauges(h.ssc) is None
    assert engine_of(h.ssc).web_ui is not None and engine_of(h.ssc).web_ui._handle.stopped()


def test_two_contexts_on_one_spark_context_do_not_clash(harness: Any) -> None:
    one: Harness = harness()
    two: Harness = harness()
    one.ssc.queueStream([[1]]).foreachRDD(lambda rdd: rdd.count())
    two.ssc.queueStream([[1, 2, 3, 4]]).foreachRDD(lambda rdd: rdd.count())
    one.ssc.start()
    two.ssc.start()
    one.run_batches(1)
    two.run_batches(1)
    engine_of(one.ssc).bus.wait_until_empty(60)
    engine_of(two.ssc).bus.wait_until_empty(60)
    first, second = source_gauges(one.ssc), source_gauges(two.ssc)
    assert first is not None and second is not None
    assert (
        first["lastCompletedBatch.inputRecords"],
        second["lastCompletedBatch.inputRecords"],
    ) == (
        1,
        4,
    )
    assert engine_of(one.ssc).web_ui is not None and engine_of(two.ssc).web_ui is not None
    assert json.loads(engine_of(one.ssc).web_ui._handle.batchJson(1000))["numInputRows"] == 1
    assert json.loads(engine_of(two.ssc).web_ui._handle.batchJson(1000))["numInputRows"] == 4


def test_a_shim_built_before_the_tab_is_named_with_the_fix(
    harness: Any, monkeypatch: Any, caplog: Any
) -> None:
    monkeypatch.setattr(webui, "UI_CLASS", "io.dstream.shim.ui.NoSuchClass")
    h: Harness = harness()
    seen: list[int] = []
    h.ssc.queueStream([[1, 2]]).foreachRDD(lambda rdd: seen.append(rdd.count()))
    with caplog.at_level(logging.WARNING, logger="dstream.scheduler.webui"):
        h.ssc.start()
    assert "has no Streaming tab: it was built before the tab was added" in caplog.text
    assert "Rebuild it with `make shim` and restart the driver" in caplog.text
    assert engine_of(h.ssc).web_ui is None
    h.run_batches(1)
    assert seen == [2]  # the program runs without the tab


@pytest.mark.parametrize("version", [0, 2])
def test_documents_of_another_format_are_refused_with_the_fix(
    harness: Any, monkeypatch: Any, caplog: Any, version: int
) -> None:
    monkeypatch.setattr(webui, "FORMAT_VERSION", version)
    h: Harness = harness()
    h.ssc.queueStream([[1]]).foreachRDD(lambda rdd: rdd.count())
    with caplog.at_level(logging.WARNING, logger="dstream.scheduler.webui"):
        h.ssc.start()
    assert (
        f"the driver sends Streaming tab documents of format {version}, this shim reads "
        "format 1: rebuild the shim (make shim) and restart the driver"
    ) in caplog.text
    assert engine_of(h.ssc).web_ui is None
    h.run_batches(1)
