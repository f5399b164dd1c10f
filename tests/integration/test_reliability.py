"""No interval lost, duplicated or double-counted: failed outputs are retried and, if they
still fail, recorded as failed (never as completed); the engine bounds its backlog, halts on
checkpoints that keep failing, has one writer for its journal and restores its settings."""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from dstream import (
    Duration,
    ManualClock,
    StreamingContext,
    StreamingJobError,
    StreamingListener,
    StreamingSettings,
    Time,
)
from dstream.errors import HaltedError
from dstream.listener import CheckpointInfo
from dstream.scheduler.engine import engine_of
from dstream.storage.filesystem import LocalFileSystem
from dstream.storage.journal import MetadataJournal
from dstream.streams.state_base import StateStream

from .conftest import Harness

FAST_RETRIES = {"output_retries": 2, "output_retry_backoff": "10ms"}


class Ops(StreamingListener):
    def __init__(self) -> None:
        self.completed: list[Any] = []
        self.submitted: list[Any] = []
        self.in_flight: list[int] = []
        self.checkpoints: list[CheckpointInfo] = []
        self.failed_checkpoints: list[CheckpointInfo] = []

    def onBatchSubmitted(self, batchSubmitted: Any) -> None:
        self.submitted.append(batchSubmitted.batchInfo())
        self.in_flight.append(len(self.submitted) - len(self.completed))

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        self.completed.append(batchCompleted.batchInfo())

    def onCheckpointCompleted(self, checkpoint: CheckpointInfo) -> None:
        self.checkpoints.append(checkpoint)

    def onCheckpointFailed(self, checkpoint: CheckpointInfo) -> None:
        self.failed_checkpoints.append(checkpoint)


def latest_record(ckpt: Path) -> Any:
    latest = MetadataJournal(LocalFileSystem(), str(ckpt)).read_latest()
    assert latest is not None
    return latest.record


def flaky_sink(log: Path, fail: dict[int, int]) -> Any:
    """A sink that fails ``fail[time ms]`` times for that interval, then writes it."""
    calls: dict[int, int] = {}

    def sink(time: Time, rdd: Any) -> None:
        calls[time.ms] = calls.get(time.ms, 0) + 1
        if calls[time.ms] <= fail.get(time.ms, 0):
            raise OSError(f"sink timeout #{calls[time.ms]}")
        with log.open("a") as f:
            f.write(f"{time.ms} {sorted(rdd.collect())}\n")

    return sink


def test_a_transient_output_failure_is_retried_and_the_interval_not_lost(
    harness: Any, tmp_path: Path
) -> None:
    h: Harness = harness(settings=StreamingSettings(**FAST_RETRIES))
    ops = Ops()
    h.ssc.addStreamingListener(ops)
    log = tmp_path / "sink.log"
    h.ssc.queueStream([[1], [2], [3]]).save(flaky_sink(log, {2000: 2}), name="s")
    h.ssc.start()
    h.run_batches(3)
    engine_of(h.ssc).bus.wait_until_empty(30)
    assert h.ssc.awaitTerminationOrTimeout(0) is False  # nothing raised: nothing failed
    assert log.read_text().splitlines() == ["1000 [1]", "2000 [2]", "3000 [3]"]
    attempts = [info.output_operations[0].attempts for info in ops.completed]
    assert attempts == [1, 3, 1]
    assert not any(info.failed for info in ops.completed)


def test_an_interval_that_still_fails_is_journaled_as_failed_and_later_ones_run(
    harness: Any, tmp_path: Path
) -> None:
    h: Harness = harness(settings=StreamingSettings(**FAST_RETRIES))
    ckpt = tmp_path / "ckpt"
    h.ssc.checkpoint(str(ckpt))
    log = tmp_path / "sink.log"
    h.ssc.queueStream([[1], [2], [3]]).save(flaky_sink(log, {2000: 99}), name="s")
    # A queue cannot be recovered; nothing else here needs it to be: only the journal is read.
    h.ssc.start()
    h.run_batches(3)
    with pytest.raises(StreamingJobError, match=r"save at test_reliability\.py:\d+") as info:
        h.ssc.awaitTerminationOrTimeout(0)
    assert "sink timeout #3" in str(info.value)  # the last of 3 attempts
    assert log.read_text().splitlines() == ["1000 [1]", "3000 [3]"]
    record = latest_record(ckpt)
    assert record.failed_ms == (2000,)
    assert record.completed_ms == 3000 and record.pending_ms == ()


def put(indir: Path, name: str, at_ms: int) -> None:
    """A one-line file ``name`` that arrived at ``at_ms``."""
    (indir / name).write_text(name + "\n")
    os.utime(indir / name, ns=(at_ms * 1_000_000,) * 2)


def file_program(
    sc: Any, clock: ManualClock, indir: Path, ckpt: Path, sink: Any, **settings: Any
) -> StreamingContext:
    """Lines of the files in ``indir``, each interval's to ``sink``, with a checkpoint."""
    ssc = StreamingContext(sc, Duration(1000), clock=clock, settings=StreamingSettings(**settings))
    ssc.checkpoint(str(ckpt))
    ssc.textFileStream(str(indir)).save(sink, name="db")
    return ssc


def halting_program(
    sc: Any, clock: ManualClock, indir: Path, out: Path, ckpt: Path, gate: Path
) -> StreamingContext:
    def sink(time: Time, rdd: Any) -> None:
        if gate.exists():  # the outage: the external system refuses writes
            raise OSError("the database is down")
        with (out / "sink.log").open("a") as f:
            f.write(f"{time.ms} {sorted(rdd.collect())}\n")

    return file_program(sc, clock, indir, ckpt, sink, on_failed_interval="halt", **FAST_RETRIES)


def test_with_halt_a_failed_interval_stops_the_program_and_runs_again_after_a_restart(
    sc: Any, tmp_path: Path
) -> None:
    indir, out, ckpt, gate = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt", tmp_path / "down"
    indir.mkdir()
    out.mkdir()

    clock = ManualClock(0)
    first = halting_program(sc, clock, indir, out, ckpt, gate)
    put(indir, "a", 500)
    put(indir, "b", 1500)
    put(indir, "c", 2500)
    first.start()
    clock.advance(1000)
    assert first.wait_for_batch(1000, 60)
    gate.touch()
    clock.advance(2000)  # 2000 fails (after retries): nothing after it may complete
    with pytest.raises(HaltedError, match=r"save at test_reliability\.py:\d+ at batch"):
        first.wait_for_batch(2000, 60)
    record = latest_record(ckpt)
    assert record.completed_ms == 1000 and 2000 in record.pending_ms
    assert record.failed_ms == ()  # not done: pending, to be run again
    first.stop(stopSparkContext=False)

    gate.unlink()  # the outage is over; the driver is restarted
    clock = ManualClock(3000)
    resumed = StreamingContext.getOrCreate(
        str(ckpt), lambda: halting_program(sc, clock, indir, out, ckpt, gate), sc, clock=clock
    )
    resumed.start()
    assert resumed.wait_for_batch(3000, 60)
    resumed.stop(stopSparkContext=False)
    assert (out / "sink.log").read_text().splitlines() == ["1000 ['a']", "2000 ['b']", "3000 ['c']"]


def test_the_backlog_is_bounded_and_reported(harness: Any) -> None:
    h: Harness = harness(settings=StreamingSettings(max_backlog=2))
    ops = Ops()
    h.ssc.addStreamingListener(ops)
    release = threading.Event()
    entered = threading.Event()

    def slow(time: Time, rdd: Any) -> None:
        if time.ms == 1000:
            entered.set()
            assert release.wait(60)

    h.ssc.queueStream([[i] for i in range(10)]).foreachRDD(slow)
    h.ssc.start()
    for _ in range(10):  # ten intervals come due while the first one is stuck
        h.clock.advance(1000)
    assert entered.wait(60)
    release.set()
    assert h.ssc.wait_for_batch(10_000, 120)
    engine_of(h.ssc).bus.wait_until_empty(30)
    assert [i.batchTime().ms for i in ops.completed] == [t * 1000 for t in range(1, 11)]
    assert max(ops.in_flight) == 2  # never more than max_backlog generated and not complete
    assert max(i.backlog for i in ops.submitted) >= 7  # the third one waited behind 7 more


def test_checkpoints_that_keep_failing_are_reported_and_halt_the_engine(
    harness: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = StreamingSettings(checkpoint_retries=1, max_checkpoint_failures=2)
    h: Harness = harness(settings=settings)
    ops = Ops()
    h.ssc.addStreamingListener(ops)
    tried: list[Time] = []

    def broken_disk(self: StateStream, time: Time, rdd: Any) -> None:
        tried.append(time)
        raise OSError("No space left on device")

    monkeypatch.setattr(StateStream, "checkpoint_now", broken_disk)
    pairs = h.ssc.queueStream([[("k", 1)]] * 6).map(lambda kv: kv)
    pairs.updateStateByKey(lambda new, old: sum(new) + (old or 0)).setName("totals").checkpoint(
        1
    ).foreachRDD(lambda rdd: None)
    h.ssc.start()
    h.clock.advance(1000)
    assert h.ssc.wait_for_batch(1000, 60)
    h.clock.advance(1000)
    # Which intervals are checkpointed depends on how long a failed write and its retry
    # take: the checkpointer skips an interval while it still writes (or retries) an older
    # one (a loaded machine tried 1 s and 4 s). The promise is the halt after the second
    # failure in a row, whichever intervals those were.
    with pytest.raises(
        HaltedError, match=r"checkpointing updateStateByKey at .*\(2 checkpoints in a row"
    ):
        for t in range(2000, 21000, 1000):
            h.ssc.wait_for_batch(t, 60)
            h.clock.advance(1000)
    engine_of(h.ssc).bus.wait_until_empty(30)
    failed = ops.failed_checkpoints
    assert [(f.name, f.attempts, f.consecutive_failures) for f in failed] == [
        ("totals", 2, 1),
        ("totals", 2, 2),
    ]
    assert "No space left on device" in (failed[0].error or "")
    assert tried[:4] == [failed[0].batch_time] * 2 + [failed[1].batch_time] * 2


def test_the_journal_has_one_writer(
    harness: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Records for checkpoints are written by the scheduler's loop like every other record
    after start(), never by the checkpointer's thread (sequence numbers could collide, an older view could
    be written last)."""
    writers: list[str] = []
    write = MetadataJournal.write

    def recording(self: MetadataJournal, record: Any) -> int:
        writers.append(threading.current_thread().name)
        return write(self, record)

    monkeypatch.setattr(MetadataJournal, "write", recording)
    h: Harness = harness()
    ops = Ops()
    h.ssc.addStreamingListener(ops)
    h.ssc.checkpoint(str(tmp_path / "ckpt"))
    (tmp_path / "in").mkdir()
    lines = h.ssc.textFileStream(str(tmp_path / "in")).map(lambda x: (x, 1))
    lines.updateStateByKey(lambda n, o: sum(n) + (o or 0)).checkpoint(1).foreachRDD(lambda r: None)
    h.ssc.start()
    for _ in range(4):
        h.run_batches(1)
        engine_of(h.ssc).checkpointer.wait_idle(60)
    h.run_batches(1)
    engine_of(h.ssc).bus.wait_until_empty(30)
    assert ops.checkpoints, "no checkpoint was written"
    # The program's first record is written by start() before the loop exists; every later
    # one by the loop.
    assert writers[0] == threading.current_thread().name
    assert len(writers) >= 10 and set(writers[1:]) == {"dstream-scheduler"}, set(writers)


def test_a_restored_program_runs_with_its_saved_settings(
    sc: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "in").mkdir()
    saved = StreamingSettings(file_remember="5s", pipelining_depth=2, max_backlog=4)

    def setup(clock: ManualClock, settings: StreamingSettings | None = None) -> StreamingContext:
        ssc = StreamingContext(sc, 1, clock=clock, settings=settings or saved)
        ssc.checkpoint(str(tmp_path / "ckpt"))
        ssc.textFileStream(str(tmp_path / "in")).foreachRDD(lambda rdd: None)
        return ssc

    clock = ManualClock(0)
    first = setup(clock)
    first.start()
    clock.advance(1000)
    assert first.wait_for_batch(1000, 60)
    first.stop(stopSparkContext=False)
    record = latest_record(tmp_path / "ckpt")
    assert StreamingSettings.from_bytes(record.settings) == saved
    assert ("spark.app.name", sc.appName) in record.spark_conf
    assert not {k for k, _ in record.spark_conf} & {"spark.driver.port", "spark.app.id"}

    resumed = StreamingContext.getOrCreate(str(tmp_path / "ckpt"), lambda: setup(clock), sc)
    assert engine_of(resumed).settings == saved  # not the defaults
    override = StreamingSettings(file_remember="9s")
    with caplog.at_level(logging.WARNING, logger="dstream.scheduler.recovery"):
        again = StreamingContext.getOrCreate(
            str(tmp_path / "ckpt"), lambda: setup(clock), sc, settings=override
        )
    assert engine_of(again).settings == override
    assert "file_remember: Duration(5000) then, Duration(9000) now" in caplog.text


def test_a_sink_gets_the_intervals_identity(harness: Any, tmp_path: Path) -> None:
    h: Harness = harness()
    h.ssc.checkpoint(str(tmp_path / "ckpt"))
    seen: list[Any] = []
    (tmp_path / "in").mkdir()
    stream = h.ssc.textFileStream(str(tmp_path / "in"))
    stream.save(lambda time, rdd, interval: seen.append(interval), name="warehouse")
    with pytest.raises(
        TypeError, match=r"save\(\) takes sink\(time, rdd\) or sink\(time, rdd, interval\)"
    ):
        stream.save(lambda a, b, c, d: None)
    h.ssc.start()
    h.run_batches(2)
    assert [(i.time, i.name, i.key) for i in seen] == [
        (Time(1000), "warehouse", "warehouse/1000"),
        (Time(2000), "warehouse", "warehouse/2000"),
    ]
    assert {i.epoch for i in seen} == {1}  # the first driver on this checkpoint directory


def stoppable_program(
    sc: Any, clock: ManualClock, indir: Path, out: Path, ckpt: Path, gate: Path
) -> StreamingContext:
    """A sink whose Spark job runs while the test holds an exclusive lock on ``gate`` (a
    long write): each task takes a shared lock on it first."""

    def long_write(records: Any) -> Any:
        import fcntl

        with open(gate) as f:
            fcntl.flock(f, fcntl.LOCK_SH)
        return records

    def sink(time: Time, rdd: Any) -> None:
        got = sorted(rdd.mapPartitions(long_write).collect())
        with (out / "sink.log").open("a") as f:
            f.write(f"{time.ms} {got}\n")

    return file_program(sc, clock, indir, ckpt, sink)


def test_an_interval_cancelled_by_stop_is_not_recorded_and_runs_after_a_restart(
    sc: Any, tmp_path: Path
) -> None:
    indir, out, ckpt = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    gate = tmp_path / "gate"
    indir.mkdir()
    out.mkdir()
    gate.touch()
    put(indir, "a", 500)
    put(indir, "b", 1500)
    clock = ManualClock(0)
    first = stoppable_program(sc, clock, indir, out, ckpt, gate)
    first.start()
    clock.advance(1000)
    assert first.wait_for_batch(Time(1000), 60)
    with gate.open() as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        clock.advance(1000)  # 2000's write starts and does not end...
        tracker = sc.statusTracker()
        group = f"{engine_of(first).job_group_prefix}-2000"
        poll = threading.Event()  # never set: 50 ms between two looks at Spark's jobs
        for _ in range(1200):  # until Spark runs the interval's job
            if tracker.getJobIdsForGroup(group):
                break
            poll.wait(0.05)
        assert tracker.getJobIdsForGroup(group), "the interval's job never started"
        first.stop(stopSparkContext=False)  # ...before the program is stopped, not gracefully
    record = latest_record(ckpt)
    # Cancelled by the stop, not failed: still to do, so a restart runs it.
    assert record.completed_ms == 1000 and record.failed_ms == ()

    clock = ManualClock(2000)
    resumed = StreamingContext.getOrCreate(
        str(ckpt), lambda: stoppable_program(sc, clock, indir, out, ckpt, gate), sc, clock=clock
    )
    resumed.start()
    assert resumed.wait_for_batch(Time(2000), 60)
    resumed.stop(stopSparkContext=False)
    assert (out / "sink.log").read_text().splitlines() == ["1000 ['a']", "2000 ['b']"]
