"""Driver recovery of a Kafka stream in one process: the checkpoint directory is copied at
the moment an interval has been generated (its ranges journaled) but not yet output — what
a crash right then leaves behind. StreamingContext.getOrCreate resumes from that copy after
more records arrived: the interrupted interval reads exactly its recorded ranges (not the
newer records), the next interval starts where it ended, and the running counts are exact.
"""

from __future__ import annotations

import shutil
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from dstream import Duration, ManualClock, StreamingContext, Time
from dstream.kafka import createDirectStream
from dstream.scheduler.engine import engine_of
from testbed.kafka import KafkaBroker
from tests.kafka.conftest import Writer, records

B = 1000
# The interval at which the checkpoint directory is copied (set per test), and where to.
CRASH: dict[str, Any] = {"at_ms": None, "source": None, "copy": None}


def crash_copy(time: Time, rdd: Any) -> None:
    """Output #0 of the first run: at the chosen interval, before any other output of it
    runs, snapshot the checkpoint directory as a crash would leave it. A module-level
    function, so the journal pickles it by reference."""
    if time.ms == CRASH["at_ms"]:
        shutil.copytree(CRASH["source"], CRASH["copy"])


def program(
    sc: Any, clock: ManualClock, bootstrap: str, topic: str, out: Path, ckpt: Path, crash: bool
) -> StreamingContext:
    ssc = StreamingContext(sc, Duration(B), clock=clock)
    ssc.checkpoint(str(ckpt))
    kafka = {"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"}
    events = createDirectStream(ssc, [topic], kafka).setName("events")
    if crash:
        events.foreachRDD(crash_copy)
    events.map(lambda kv: kv[1]).saveAsTextFiles(f"{out}/values")
    totals = events.updateStateByKey(lambda new, old: (old or 0) + len(new))
    totals.setName("totals").checkpoint(2)
    totals.saveAsTextFiles(f"{out}/totals")
    return ssc


def run(ssc: StreamingContext, clock: ManualClock, upto: int) -> None:
    ssc.start()
    while clock.now().ms < upto * B:
        clock.advance(B)
    assert ssc.wait_for_batch(Time(upto * B), 120)
    ssc.awaitTerminationOrTimeout(0)  # raises if any interval failed


def lines(directory: Path) -> list[str]:
    found: list[str] = []
    for part in sorted(directory.glob("part-*")):
        found.extend(part.read_text().splitlines())
    return sorted(found)


def test_a_restarted_driver_rereads_exactly_the_recorded_ranges(
    sc: Any, kafka_broker: KafkaBroker, new_topic: Any, writer: Writer, tmp_path: Path
) -> None:
    topic = new_topic(2)
    out, out2, ckpt, copy = (tmp_path / n for n in ("out", "out2", "ckpt", "crash"))
    CRASH.update(at_ms=3 * B, source=str(ckpt), copy=str(copy))
    clock = ManualClock(0)
    first = program(sc, clock, kafka_broker.bootstrap, topic, out, ckpt, crash=True)
    first.start()
    sent = []
    for i in range(1, 4):
        sent.append(writer.send(topic, records(f"i{i}", 30 + i)))
        clock.advance(B)
        assert first.wait_for_batch(Time(i * B), 120)
    engine_of(first).checkpointer.wait_idle(60)
    first.stop(stopSparkContext=False)
    CRASH["at_ms"] = None
    assert copy.is_dir(), "the crash snapshot was not taken"

    # Records that arrive while the driver is down belong to the next interval, not to the
    # interval the crash interrupted.
    sent.append(writer.send(topic, records("while-down", 17)))
    clock2 = ManualClock(3 * B)
    resumed = StreamingContext.getOrCreate(
        str(copy),
        lambda: program(sc, clock2, kafka_broker.bootstrap, topic, out2, copy, crash=False),
        sc,
        rebuildGraph=True,
    )
    assert engine_of(resumed).restored_from is not None
    run(resumed, clock2, 5)
    resumed.stop(stopSparkContext=False)

    values = {1: lines(out / "values-1000"), 2: lines(out / "values-2000")}
    for i in (3, 4, 5):
        values[i] = lines(out2 / f"values-{i * B}")
    assert values[3] == sorted(v for _, v in sent[2])  # the recorded ranges, exactly
    assert values[4] == sorted(v for _, v in sent[3])
    assert values[5] == []
    everything = Counter(v for i in values for v in values[i])
    assert everything == Counter(v for batch in sent for _, v in batch)  # each exactly once
    totals = dict(eval(line) for line in lines(out2 / f"totals-{5 * B}"))
    assert totals == dict(Counter(k for batch in sent for k, _ in batch))


def test_ranges_since_a_lagging_checkpoint_are_kept_for_a_restart(
    sc: Any,
    kafka_broker: KafkaBroker,
    new_topic: Any,
    writer: Writer,
    tmp_path: Path,
    hung_checkpoints: threading.Event,
) -> None:
    """The running counts' checkpoint writes hang for 6 intervals, longer than the ranges
    are otherwise kept (the window of its replay span; rangesRemember 1 s): a driver
    restarted then rebuilds the counts from the start, so every interval's offset ranges
    must still be on record. The restart from a copy taken at interval 6 reads them all
    again, and the counts are exact."""
    gate = hung_checkpoints
    topic = new_topic(2)
    ckpt, copy, out = tmp_path / "ckpt", tmp_path / "crash", tmp_path / "out"

    def counts(clock: ManualClock, directory: Path) -> StreamingContext:
        ssc = StreamingContext(sc, Duration(B), clock=clock)
        ssc.checkpoint(str(directory))
        kafka = {"bootstrap.servers": kafka_broker.bootstrap, "auto.offset.reset": "earliest"}
        events = createDirectStream(ssc, [topic], kafka, rangesRemember="1s")
        totals = events.updateStateByKey(lambda new, old: (old or 0) + len(new))
        totals.checkpoint(1)  # its replay span: 3 intervals
        totals.saveAsTextFiles(f"{out}/totals")
        return ssc

    clock = ManualClock(0)
    first = counts(clock, ckpt)
    first.start()
    sent = []
    try:
        for i in range(1, 7):
            sent.append(writer.send(topic, records(f"i{i}", 10 + i)))
            clock.advance(B)
            assert first.wait_for_batch(Time(i * B), 120)
        shutil.copytree(ckpt, copy)  # the crash, with no checkpoint of the counts on record
    finally:
        gate.set()
        first.stop(stopSparkContext=False)

    sent.append(writer.send(topic, records("after", 5)))
    clock2 = ManualClock(6 * B)
    resumed = StreamingContext.getOrCreate(
        str(copy), lambda: counts(clock2, copy), sc, rebuildGraph=True
    )
    assert engine_of(resumed).restored_from is not None
    run(resumed, clock2, 7)
    resumed.stop(stopSparkContext=False)
    totals = dict(eval(line) for line in lines(out / f"totals-{7 * B}"))
    assert totals == dict(Counter(k for batch in sent for k, _ in batch))


def test_latest_is_where_the_first_start_began_after_a_crash_before_the_first_interval(
    sc: Any, kafka_broker: KafkaBroker, new_topic: Any, writer: Writer, tmp_path: Path
) -> None:
    """The "latest" position is the log end at the first start(): a driver killed before its first
    interval resumes from there, and reads what was produced while it was down (a new
    program would start at the log end of its own start and never read it)."""
    topic = new_topic(2)
    out, ckpt = tmp_path / "out", tmp_path / "ckpt"
    before = writer.send(topic, records("before-start", 11))

    def setup(clock: ManualClock) -> StreamingContext:
        ssc = StreamingContext(sc, Duration(B), clock=clock)
        ssc.checkpoint(str(ckpt))
        kafka = {"bootstrap.servers": kafka_broker.bootstrap}  # auto.offset.reset: latest
        values = createDirectStream(ssc, [topic], kafka).map(lambda kv: kv[1])
        values.saveAsTextFiles(f"{out}/values")
        return ssc

    first = setup(ManualClock(200))
    first.start()
    first.stop(stopSparkContext=False)  # as a kill before the first interval leaves it
    down = writer.send(topic, records("while-down", 23))

    clock = ManualClock(3 * B + 200)
    resumed = StreamingContext.getOrCreate(str(ckpt), lambda: setup(clock), clock=clock)
    assert engine_of(resumed).restored_from is not None
    run(resumed, clock, 4)
    resumed.stop(stopSparkContext=False)
    read = Counter(v for i in range(1, 5) for v in lines(out / f"values-{i * B}"))
    assert read == Counter(v for _, v in down)  # everything since the start, once
    assert not set(read) & {v for _, v in before}
