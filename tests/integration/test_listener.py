"""StreamingListener callbacks: order, record counts and delays."""

from __future__ import annotations

from typing import Any

from dstream import StreamingListener
from dstream.scheduler.engine import engine_of

from .conftest import Harness


class Recorder(StreamingListener):
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def onStreamingStarted(self, streamingStarted: Any) -> None:
        self.events.append(("started", streamingStarted.time()))

    def onBatchSubmitted(self, batchSubmitted: Any) -> None:
        self.events.append(("submitted", batchSubmitted.batchInfo()))

    def onBatchStarted(self, batchStarted: Any) -> None:
        self.events.append(("batch-started", batchStarted.batchInfo()))

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        self.events.append(("completed", batchCompleted.batchInfo()))

    def onOutputOperationStarted(self, outputOperationStarted: Any) -> None:
        self.events.append(("op-started", outputOperationStarted.outputOperationInfo()))

    def onOutputOperationCompleted(self, outputOperationCompleted: Any) -> None:
        self.events.append(("op-completed", outputOperationCompleted.outputOperationInfo()))


class Broken(StreamingListener):
    def onBatchCompleted(self, batchCompleted: Any) -> None:
        raise RuntimeError("listener bug")


def test_batch_events_in_order_with_counts_and_delays(harness: Any) -> None:
    h: Harness = harness()
    recorder = Recorder()
    h.ssc.addStreamingListener(Broken())  # a failing listener must not stop the others
    h.ssc.addStreamingListener(recorder)
    clock = h.clock
    stream = h.ssc.queueStream([[1, 2, 3], [4]])
    # The output job takes 300 ms of (manual) time.
    stream.foreachRDD(lambda rdd: rdd.count() and clock.advance(300))
    h.ssc.start()
    h.run_batches(1)
    h.run_batches(1)
    engine_of(h.ssc).bus.wait_until_empty(30)
    kinds = [k for k, _ in recorder.events]
    per_batch = ["submitted", "batch-started", "op-started", "op-completed", "completed"]
    assert kinds == ["started", *per_batch, *per_batch]
    done = [info for k, info in recorder.events if k == "completed"]
    assert [i.batchTime().ms for i in done] == [1000, 2000]
    assert [i.numRecords() for i in done] == [3, 1]
    first = done[0]
    assert first.schedulingDelay() == 0
    assert first.processingDelay() == 300
    assert first.totalDelay() == 300
    assert first.schedulingDelay() + first.processingDelay() == first.totalDelay()
    assert not first.failed
    ops = first.outputOperationInfos()
    assert list(ops) == [0] and ops[0].label.startswith("foreachRDD at test_listener.py:")
    assert ops[0].duration_ms == 300 and ops[0].failureReason() is None
    # Batch 2000 was generated when the clock reached 2300 (1300 + 1000): it waited 300 ms.
    assert done[1].schedulingDelay() == 300
    assert done[1].totalDelay() == 600


def test_a_failed_output_operation_is_reported_in_its_batch(harness: Any) -> None:
    h: Harness = harness()
    recorder = Recorder()
    h.ssc.addStreamingListener(recorder)
    h.ssc.queueStream([[0]]).map(lambda x: 1 // x).foreachRDD(lambda rdd: rdd.collect())
    h.ssc.start()
    h.run_batches(1)
    engine_of(h.ssc).bus.wait_until_empty(30)
    (info,) = [i for k, i in recorder.events if k == "completed"]
    assert info.failed
    reason = info.outputOperationInfos()[0].failureReason()
    assert "map at test_listener.py:" in reason and "ZeroDivisionError" in reason
