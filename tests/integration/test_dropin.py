"""Programs and listeners written for pyspark.streaming run unchanged: the times they are
handed behave as PySpark's datetimes, listeners read Spark's accessors, pprint prints what
PySpark prints, slice and getActiveOrCreate behave as PySpark's."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from dstream import StreamingContext, StreamingListener, Time
from dstream.scheduler.engine import engine_of

from .conftest import Harness


def test_times_handed_to_functions_behave_as_pyspark_datetimes(harness: Any) -> None:
    h: Harness = harness(start_ms=1_700_000_000_000)
    stream = h.ssc.queueStream([[1], [2], [3]])
    seen: list[tuple[Any, ...]] = []
    begin: list[Any] = []

    def remember_times(time: Any, rdd: Any) -> None:
        # Written against the naive local datetime pyspark.streaming passes.
        if not begin:
            begin.append(time)
        seen.append(
            (
                time - begin[0],
                time + dt.timedelta(seconds=1),
                time > dt.datetime.fromtimestamp(0),
                time.strftime("%H:%M:%S"),
                time.hour,
                str(time),
            )
        )

    stream.foreachRDD(remember_times)

    def stamp(time: Any, rdd: Any) -> Any:
        seconds = time.timestamp()
        return rdd.map(lambda x: (x, seconds))

    shifted = stream.transform(stamp)
    got: list[Any] = []
    shifted.foreachRDD(lambda rdd: got.extend(rdd.collect()))
    h.ssc.start()
    h.run_batches(3)
    first = dt.datetime.fromtimestamp(1_700_000_001)  # the first batch, as PySpark's datetime
    for i, (elapsed, later, after_epoch, clock_text, hour, text) in enumerate(seen):
        at = first + dt.timedelta(seconds=i)
        assert elapsed == dt.timedelta(seconds=i) and elapsed.total_seconds() == i
        assert later == at + dt.timedelta(seconds=1)
        assert after_epoch
        assert (clock_text, hour, text) == (at.strftime("%H:%M:%S"), at.hour, str(at))
    assert got == [(1, 1_700_000_001.0), (2, 1_700_000_002.0), (3, 1_700_000_003.0)]


def test_slice_with_datetime_bounds_as_pysparks_own_test(harness: Any) -> None:
    """PySpark's test_slice: bounds computed as begin_time + timedelta from a batch time."""
    h: Harness = harness()
    h.ssc.remember(4.0)
    stream = h.ssc.queueStream([[1], [2], [3], [4]])
    times: list[Any] = []
    stream.foreachRDD(lambda t, rdd: times.append(t))
    h.ssc.start()
    h.run_batches(4)
    begin = times[0]

    def sliced(begin_delta: int, end_delta: int) -> set[int]:
        rdds = stream.slice(
            begin + dt.timedelta(seconds=begin_delta), begin + dt.timedelta(seconds=end_delta)
        )
        return {x for rdd in rdds for x in rdd.collect()}

    assert sliced(0, 0) == {1}
    assert sliced(1, 2) == {2, 3}
    assert sliced(1, 4) == {2, 3, 4}
    assert sliced(0, 4) == {1, 2, 3, 4}
    assert sliced(2, 1) == set()  # an end before its begin: empty, as PySpark's
    naive = dt.datetime.fromtimestamp(begin.timestamp())  # a datetime a person typed
    assert {
        x for r in stream.slice(naive, naive + dt.timedelta(seconds=1)) for x in r.collect()
    } == {1, 2}


class PySparkListener(StreamingListener):
    """Written exactly as for pyspark.streaming: Spark's accessors, Java maps."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, Any]] = []

    def _row(self, kind: str, info: Any) -> None:
        inputs = info.streamIdToInputInfo()
        outputs = info.outputOperationInfos()
        self.rows.append(
            {
                "kind": kind,
                "batch_ms": info.batchTime().milliseconds(),
                "submitted": info.submissionTime(),
                "delays": (info.schedulingDelay(), info.processingDelay(), info.totalDelay()),
                "start_end": (info.processingStartTime(), info.processingEndTime()),
                "records": info.numRecords(),
                "input_ids": sorted(inputs.keySet()),
                "inputs": [
                    (
                        inputs.get(k).inputStreamId(),
                        inputs.get(k).numRecords(),
                        inputs[k].numRecords,  # read as a field too
                        dict(inputs[k].metadata()),
                        inputs[k].metadataDescription(),
                    )
                    for k in inputs.keySet()
                ],
                "input_map": (inputs.size(), inputs.isEmpty(), inputs.containsKey(-1)),
                "outputs": [
                    (
                        outputs.get(k).batchTime().milliseconds(),
                        outputs.get(k).id(),
                        outputs.get(k).name(),
                        outputs.get(k).description(),
                        outputs.get(k).startTime(),
                        outputs.get(k).endTime(),
                        outputs.get(k).failureReason(),
                    )
                    for k in outputs.keySet()
                ],
            }
        )

    def onBatchSubmitted(self, batchSubmitted: Any) -> None:
        self._row("submitted", batchSubmitted.batchInfo())

    def onBatchStarted(self, batchStarted: Any) -> None:
        self._row("started", batchStarted.batchInfo())

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        self._row("completed", batchCompleted.batchInfo())


def test_a_listener_written_for_pyspark_reads_every_field(harness: Any) -> None:
    h: Harness = harness()
    listener = PySparkListener()
    h.ssc.addStreamingListener(listener)
    clock = h.clock
    source = h.ssc.queueStream([[1, 2, 3]])
    source.foreachRDD(lambda rdd: rdd.count() and clock.advance(200))
    h.ssc.start()
    h.run_batches(1)
    engine_of(h.ssc).bus.wait_until_empty(30)
    submitted, started, completed = listener.rows
    sid = source._node.id
    name = completed["outputs"][0][2]
    assert name.startswith("foreachRDD at test_dropin.py:")
    assert submitted == {
        "kind": "submitted",
        "batch_ms": 1000,
        "submitted": 1000,
        "delays": (-1, -1, -1),  # not known yet: -1, as Spark's Java API says
        "start_end": (-1, -1),
        "records": 0,  # counted once the batch has run
        "input_ids": [],
        "inputs": [],
        "input_map": (0, True, False),
        "outputs": [(1000, 0, name, name, -1, -1, None)],
    }
    assert started["delays"] == (0, -1, -1) and started["start_end"] == (1000, -1)
    assert completed == {
        "kind": "completed",
        "batch_ms": 1000,
        "submitted": 1000,
        "delays": (0, 200, 200),
        "start_end": (1000, 1200),
        "records": 3,
        "input_ids": [sid],
        "inputs": [(sid, 3, 3, {}, "")],
        "input_map": (1, False, False),
        "outputs": [(1000, 0, name, name, 1000, 1200, None)],
    }


def test_pprint_prints_what_pyspark_prints(
    harness: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    h: Harness = harness(start_ms=1_700_000_000_500)
    h.ssc.queueStream([list(range(12)), []]).pprint()
    times: list[Time] = []
    h.ssc.queueStream([[0], [0]]).foreachRDD(lambda t, rdd: times.append(t))
    h.ssc.start()
    h.run_batches(2)
    out = capsys.readouterr().out
    first = dt.datetime.fromtimestamp(1_700_000_001)  # what PySpark's pprint formats
    second = dt.datetime.fromtimestamp(1_700_000_002)
    dashes = "-------------------------------------------"
    expected = (
        f"{dashes}\nTime: {first}\n{dashes}\n"
        + "".join(f"{i}\n" for i in range(10))
        + "...\n\n"
        + f"{dashes}\nTime: {second}\n{dashes}\n\n"
    )
    assert out == expected
    assert [str(t) for t in times] == [str(first), str(second)]  # str(time) agrees with it


def test_get_active_or_create(sc: Any, tmp_path: Path) -> None:
    from dstream import ManualClock

    calls: list[StreamingContext] = []

    def setup() -> StreamingContext:
        ssc = StreamingContext(sc, 1, clock=ManualClock(0))
        ssc.queueStream([[1]]).foreachRDD(lambda rdd: None)
        calls.append(ssc)
        return ssc

    created = StreamingContext.getActiveOrCreate(None, setup)
    assert calls == [created] and StreamingContext.getActive() is None
    created.start()
    try:
        # A context is running: it is returned, setup is not called again.
        assert StreamingContext.getActiveOrCreate(str(tmp_path / "ckpt"), setup) is created
        assert len(calls) == 1
    finally:
        created.stop(stopSparkContext=False)
    # None running: a new one from the (empty) checkpoint directory, bound to it.
    fresh = StreamingContext.getActiveOrCreate(str(tmp_path / "ckpt"), setup)
    assert (
        len(calls) == 2
        and fresh is calls[1]
        and engine_of(fresh).checkpoint_dir == str(tmp_path / "ckpt")
    )
    with pytest.raises(TypeError, match=r"getActiveOrCreate\(\) needs a function for setupFunc"):
        StreamingContext.getActiveOrCreate(None, "setup")  # type: ignore[arg-type]


def test_checkpoint_creates_its_directory_as_pysparks(sc: Any, tmp_path: Path) -> None:
    """PySpark's checkpoint() (and getOrCreate without a checkpoint) creates the directory at
    once; its own test removes it before start()... and after stop(), which fails if missing."""
    from dstream import ManualClock

    target = tmp_path / "runs" / "ckpt"
    ssc = StreamingContext(sc, 1, clock=ManualClock(0))
    ssc.checkpoint(str(target))
    assert target.is_dir() and list(target.iterdir()) == []  # nothing written before start()
    ssc.queueStream([[1]]).foreachRDD(lambda rdd: None)
    ssc.start()  # an empty directory it created is accepted as its own
    ssc.stop(stopSparkContext=False)
    assert list(target.iterdir())

    missing = tmp_path / "missing"
    fresh = StreamingContext.getOrCreate(
        str(missing), lambda: StreamingContext(sc, 1, clock=ManualClock(0)), sc
    )
    assert missing.is_dir() and engine_of(fresh).checkpoint_dir == str(missing)
    fresh.stop(stopSparkContext=False)


def test_rdds_the_program_checkpoints_go_under_the_checkpoint_directory(
    harness: Any, tmp_path: Path
) -> None:
    """Spark's checkpoint() also sets the SparkContext's checkpoint directory, so a PySpark
    program may call rdd.checkpoint() in foreachRDD; without one Spark refuses it."""
    h: Harness = harness()
    sc = h.ssc.sparkContext
    before = sc.getCheckpointDir()  # None, or set by an earlier context in this session
    h.ssc.checkpoint(str(tmp_path / "ckpt"))
    checkpointed: list[tuple[bool, list[int]]] = []

    def checkpoint_it(rdd: Any) -> None:
        rdd.checkpoint()
        values = sorted(rdd.collect())
        checkpointed.append((rdd.isCheckpointed(), values))

    h.ssc.queueStream([[2, 1]]).foreachRDD(checkpoint_it)
    h.ssc.start()
    h.run_batches(1)
    assert checkpointed == [(True, [1, 2])]
    if before is None:
        assert sc.getCheckpointDir().startswith(f"file:{tmp_path}/ckpt/rdd-checkpoints/")
    else:
        assert sc.getCheckpointDir() == before  # a directory already set is kept
