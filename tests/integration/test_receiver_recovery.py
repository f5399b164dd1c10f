"""Driver recovery of a receiver stream in one process. The checkpoint directory is copied
while interval 3 is being output (its blocks are on record, its completion is not), and
the first driver's receiver is cut off from its client without a goodbye — what a crash
right then leaves behind. StreamingContext.getOrCreate resumes from that copy on the same
port: the blocks of interval 3 died with the first driver's SparkContext; the client, which
was never told that interval 3 completed, sends them again, and the recomputed interval 3
waits for them and reads exactly those records again. Records sent while the driver was
down go into the next interval. Every record the client sent is output exactly once, and
so are the windows: the blocks of intervals 1 and 2 completed before the crash, but a
window recomputed at 3 still reads them, and so does the running count rebuilt there, so
their client had not been told to forget them and sends them again too."""

from __future__ import annotations

import logging
import shutil
import socket
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from dstream import Duration, ManualClock, StreamingContext, Time
from dstream.receiver import createStream
from dstream.receiver.client import ReceiverClient
from dstream.scheduler.engine import engine_of
from testbed.drivers import wait_for

B = 1000
SECRET = b"recovery-test-secret-0123456789"
CRASH: dict[str, Any] = {"at_ms": None, "source": None, "copy": None}


def crash_copy(time: Time, rdd: Any) -> None:
    """Output #0 of the first run: snapshot the checkpoint directory mid-interval."""
    if time.ms == CRASH["at_ms"]:
        shutil.copytree(CRASH["source"], CRASH["copy"])


def program(
    sc: Any, clock: ManualClock, port: int, out: Path, ckpt: Path, crash: bool, wait: float = 60
) -> StreamingContext:
    ssc = StreamingContext(sc, Duration(B), clock=clock)
    ssc.checkpoint(str(ckpt))
    lines = createStream(ssc, SECRET, port, recoveryWait=wait).setName("lines")
    if crash:
        lines.foreachRDD(crash_copy)
    lines.saveAsTextFiles(f"{out}/values")
    lines.window(3, 1).count().saveAsTextFiles(f"{out}/window")
    total = lines.map(lambda r: ("n", 1)).updateStateByKey(lambda new, old: (old or 0) + sum(new))
    total.checkpoint(1)  # a rebuild reaches back at most 3 intervals, as the window does
    total.saveAsTextFiles(f"{out}/total")
    return ssc


def outputs(directory: Path, prefix: str) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for d in directory.glob(f"{prefix}-*"):
        found[int(d.name.rsplit("-", 1)[1])] = sorted(
            line for part in sorted(d.glob("part-*")) for line in part.read_text().splitlines()
        )
    return found


def test_a_restarted_driver_gets_the_uncommitted_blocks_again(sc: Any, tmp_path: Path) -> None:
    out, out2, ckpt, copy = (tmp_path / n for n in ("out", "out2", "ckpt", "crash"))
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    CRASH.update(at_ms=3 * B, source=str(ckpt), copy=str(copy))
    clock = ManualClock(0)
    first = program(sc, clock, port, out, ckpt, crash=True)
    first.start()
    sent: list[str] = []
    client = ReceiverClient([("127.0.0.1", port)], SECRET, block_records=4, retry_delay=0.2)
    try:
        for i in range(1, 4):
            batch = [f"i{i}-{j}" for j in range(10)]
            for record in batch:
                client.send(record)
            sent += batch
            assert client.wait_stored(60)
            clock.advance(B)
            assert first.wait_for_batch(Time(i * B), 120)
        assert copy.is_dir(), "the crash snapshot was not taken"
        stream = engine_of(first).graph.inputs[0]
        stream._kill_listener(0)  # the crash: the client hears nothing more from it
        first.stop(stopSparkContext=False)
        CRASH["at_ms"] = None

        while_down = [f"down-{j}" for j in range(6)]  # kept by the client meanwhile
        for record in while_down:
            client.send(record)
        client.flush()
        sent += while_down
        clock2 = ManualClock(3 * B)
        resumed = StreamingContext.getOrCreate(
            str(copy),
            lambda: program(sc, clock2, port, out2, copy, crash=False),
            sc,
            rebuildGraph=True,
        )
        assert engine_of(resumed).restored_from is not None
        resumed.start()
        assert resumed.wait_for_batch(Time(3 * B), 120)  # interval 3 again
        assert client.wait_stored(60)  # the client reconnected and sent what it kept
        for i in range(4, 9):
            clock2.advance(B)
            assert resumed.wait_for_batch(Time(i * B), 120)
        # Interval i - 3 is read by no window after i: its blocks are committed then, and the
        # client hears it at the next completion (interval 4's, the last, at 8).
        assert client.wait_committed(60)
        resumed.awaitTerminationOrTimeout(0)
        resumed.stop(stopSparkContext=False)
    finally:
        client.close()

    before, after = outputs(out, "values"), outputs(out2, "values")
    assert before[1000] == sorted(sent[:10]) and before[2000] == sorted(sent[10:20])
    assert after[3000] == sorted(sent[20:30])  # exactly what interval 3 read before
    assert after[4000] == sorted(sent[30:])  # what the client sent while the driver was down
    final = Counter(before[1000] + before[2000] + [r for t in after for r in after[t]])
    assert final == Counter(sent)  # each record exactly once
    # The windows recomputed after the restart read intervals 1 and 2 again, exactly.
    assert outputs(out, "window")[2000] == ["20"]
    assert outputs(out2, "window")[3000] == ["30"]
    assert outputs(out2, "window")[4000] == ["26"]
    assert outputs(out2, "window")[5000] == ["16"]
    # So is the running count, rebuilt from its checkpoint and the intervals after it.
    assert outputs(out, "total")[2000] == ["('n', 20)"]
    assert outputs(out2, "total")[3000] == ["('n', 30)"]
    assert outputs(out2, "total")[8000] == ["('n', 36)"]


def test_blocks_of_a_client_that_does_not_come_back_are_waited_for_then_skipped(
    sc: Any, tmp_path: Path
) -> None:
    out, out2, ckpt, copy = (tmp_path / n for n in ("out", "out2", "ckpt", "crash"))
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    CRASH.update(at_ms=2 * B, source=str(ckpt), copy=str(copy))
    clock = ManualClock(0)
    first = program(sc, clock, port, out, ckpt, crash=True)
    first.start()
    stays = ReceiverClient([("127.0.0.1", port)], SECRET, retry_delay=0.2)
    dies = ReceiverClient([("127.0.0.1", port)], SECRET)
    try:
        for i in range(1, 3):
            for client, name in ((stays, "stays"), (dies, "dies")):
                for j in range(5):
                    client.send(f"{name}-{i}-{j}")
                assert client.wait_stored(60)
            clock.advance(B)
            assert first.wait_for_batch(Time(i * B), 120)
        assert copy.is_dir(), "the crash snapshot was not taken"
        dies.close()  # this client dies with the driver: it never sends interval 2 again
        engine_of(first).graph.inputs[0]._kill_listener(0)
        first.stop(stopSparkContext=False)
        CRASH["at_ms"] = None

        clock2 = ManualClock(2 * B)
        resumed = StreamingContext.getOrCreate(
            str(copy),
            lambda: program(sc, clock2, port, out2, copy, crash=False, wait=2),
            sc,
            rebuildGraph=True,
        )
        resumed.start()
        assert resumed.wait_for_batch(Time(2 * B), 120)
        clock2.advance(B)
        assert resumed.wait_for_batch(Time(3 * B), 120)
        for i in (4, 5, 6):
            clock2.advance(B)
            assert resumed.wait_for_batch(Time(i * B), 120)
        assert stays.wait_committed(60)  # interval 2 read by no window after 5
        resumed.awaitTerminationOrTimeout(0)
        resumed.stop(stopSparkContext=False)
    finally:
        stays.close()
        dies.close()
    after = outputs(out2, "values")
    # Interval 2 again, with the blocks of the client that came back, and only those.
    assert after[2000] == sorted(f"stays-2-{j}" for j in range(5))
    assert after[3000] == [] and after[4000] == []


def counting(sc: Any, clock: ManualClock, port: int, ckpt: Path) -> StreamingContext:
    """A running count checkpointed every interval; its value per interval in COUNTS."""
    ssc = StreamingContext(sc, Duration(B), clock=clock)
    ssc.checkpoint(str(ckpt))
    lines = createStream(ssc, SECRET, port, recoveryWait=60)
    total = lines.map(lambda r: ("n", 1)).updateStateByKey(lambda new, old: (old or 0) + sum(new))
    total.checkpoint(1)  # its replay span: 3 intervals
    total.foreachRDD(lambda t, rdd: COUNTS.__setitem__(t.ms, rdd.collect()))
    return ssc


COUNTS: dict[int, Any] = {}


def test_a_checkpoint_that_falls_behind_holds_the_commits_back(
    sc: Any, tmp_path: Path, hung_checkpoints: threading.Event, caplog: pytest.LogCaptureFixture
) -> None:
    """The running count's checkpoint writes hang for 8 intervals: a driver restarted then
    rebuilds the count from the start, so no block may be committed meanwhile (before, those
    older than 3 intervals were, and the restart lost them). The driver is killed (its
    checkpoint directory copied at interval 8, its listener cut off) and restarted from the
    copy: the client sends all 8 blocks again and the count is exact. Once checkpoints are
    written again, the commits catch up."""
    gate = hung_checkpoints
    COUNTS.clear()
    ckpt, copy = tmp_path / "ckpt", tmp_path / "crash"
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    clock = ManualClock(0)
    first = counting(sc, clock, port, ckpt)
    first.start()
    client = ReceiverClient([("127.0.0.1", port)], SECRET, block_records=4, retry_delay=0.2)

    def interval(ssc: StreamingContext, clock: ManualClock, i: int) -> None:
        for j in range(4):
            client.send(f"r{i}-{j}")
        assert client.wait_stored(60)
        clock.advance(B)
        assert ssc.wait_for_batch(Time(i * B), 120)

    resumed = None
    try:
        with caplog.at_level(logging.WARNING, logger="dstream.receiver.source"):
            for i in range(1, 9):
                interval(first, clock, i)
        assert COUNTS[8000] == [("n", 32)]
        # Without the hold, blocks 1-4 would be committed by now (3 intervals of replay
        # span and one of slide before interval 8).
        assert client.kept_blocks == 8
        assert any("is too far behind" in r.getMessage() for r in caplog.records)
        shutil.copytree(ckpt, copy)  # the crash, with no checkpoint of the count on record
        engine_of(first).graph.inputs[0]._kill_listener(0)
        gate.set()
        first.stop(stopSparkContext=False)

        COUNTS.clear()
        clock2 = ManualClock(8 * B)
        resumed = StreamingContext.getOrCreate(
            str(copy), lambda: counting(sc, clock2, port, copy), sc, rebuildGraph=True
        )
        assert engine_of(resumed).restored_from is not None
        resumed.start()
        for i in range(9, 13):
            interval(resumed, clock2, i)
            assert engine_of(resumed).checkpointer is not None and engine_of(
                resumed
            ).checkpointer.wait_idle(60)
        # The count rebuilt from the start, with the 8 blocks the client sent again.
        assert COUNTS[9000] == [("n", 36)] and COUNTS[12000] == [("n", 48)]
        # Checkpoints written each interval again: the commits trail by the usual span.
        wait_for(lambda: client.kept_blocks <= 5, 60, "the commits catching up", 0.05)
    finally:
        gate.set()
        client.close()
        for ssc in (first, resumed):
            if ssc is not None:
                ssc.stop(stopSparkContext=False)
