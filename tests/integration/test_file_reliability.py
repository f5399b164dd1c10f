"""File sources under the faults a production stream meets (issue 14): a state checkpoint
slower than the file remember window, files that land with old modification times, and
file names that Hadoop's path parsing would expand or split."""

from __future__ import annotations

import logging
import os
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from dstream import (
    Duration,
    ManualClock,
    StreamingContext,
    StreamingListener,
    StreamingSettings,
    Time,
)
from dstream.scheduler.engine import engine_of
from dstream.streams.keyed_state import StateDStream

from .conftest import Harness

T0 = 1_700_000_000_000
B = 1000


def put(directory: Path, name: str, data: str | bytes, mtime_ms: int) -> Path:
    """Write under a hidden name, set the modification time, rename into place."""
    hidden = directory / f".{name}.tmp"
    if isinstance(data, str):
        hidden.write_text(data)
    else:
        hidden.write_bytes(data)
    os.utime(hidden, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    final = directory / name
    os.rename(hidden, final)
    return final


def words_of(i: int) -> list[str]:
    """File i's words: one of its own, one shared by every file."""
    return [f"w{i}", "common"]


def put_interval_file(directory: Path, i: int) -> None:
    """File i lands in interval i: its modification time is inside [T0 + (i-1)B, T0 + iB)."""
    put(directory, f"f{i:02d}.txt", "\n".join(words_of(i)) + "\n", T0 + (i - 1) * B + 500)


def oracle(upto: int) -> dict[str, int]:
    return dict(Counter(w for i in range(1, upto + 1) for w in words_of(i)))


class SlowCheckpoint:
    """Makes a state stream's first checkpoint write wait until released (or fail)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.fail = False
        self.calls: list[Time] = []
        original = StateDStream._write_checkpoint

        def write(stream: Any, time: Time, rdd: Any, directory: str) -> None:
            self.calls.append(time)
            if len(self.calls) == 1:
                self.started.set()
                assert self.release.wait(120), "the slow checkpoint was never released"
            if self.fail:
                raise OSError("checkpoint storage unavailable (test)")
            original(stream, time, rdd, directory)

        monkeypatch.setattr(StateDStream, "_write_checkpoint", write)


def totals_program(
    sc: Any, clock: ManualClock, in_dir: Path, ckpt: Path, out: Path, remember: str
) -> StreamingContext:
    ssc = StreamingContext(
        sc, Duration(B), clock=clock, settings=StreamingSettings(file_remember=remember)
    )
    ssc.checkpoint(str(ckpt))
    pairs = ssc.textFileStream(str(in_dir)).map(lambda w: (w, 1))
    totals = pairs.updateStateByKey(lambda new, old: (old or 0) + sum(new))
    totals.checkpoint(2)  # every 2 intervals: the state may replay 6 intervals
    totals.saveAsTextFiles(str(out / "totals"))
    return ssc


def saved_totals(out: Path, i: int) -> dict[str, int]:
    result: dict[str, int] = {}
    for part in sorted((out / f"totals-{T0 + i * B}").glob("part-*")):
        for line in part.read_text().splitlines():
            key, count = eval(line)  # ('w1', 3): the text form of a pair
            result[key] = count
    return result


def advance_to(ssc: StreamingContext, clock: ManualClock, i: int) -> None:
    clock.advance(T0 + i * B - clock.now().ms)
    assert ssc.wait_for_batch(Time(T0 + i * B), 120), f"interval {i} did not complete"


# ---- item 2: a checkpoint slower than the remember window ----------------------------------
def test_a_checkpoint_slower_than_the_file_remember_window_counts_each_file_once(
    sc: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_dir, ckpt, out = (tmp_path / n for n in ("in", "ckpt", "out"))
    in_dir.mkdir()
    slow = SlowCheckpoint(monkeypatch)
    clock = ManualClock(T0)
    ssc = totals_program(sc, clock, in_dir, ckpt, out, remember="3s")
    ssc.start()
    try:
        # The checkpoint of interval 2 starts and takes 10 intervals (the remember window
        # is 3): every file list it would replay from is older than the window by then.
        for i in range(1, 13):
            put_interval_file(in_dir, i)
            advance_to(ssc, clock, i)
        assert slow.started.is_set()
        slow.release.set()
        assert engine_of(ssc).checkpointer is not None and engine_of(ssc).checkpointer.wait_idle(60)
        # The next intervals are rebuilt from the checkpoint of 2 plus intervals 3..i.
        for i in range(13, 17):
            put_interval_file(in_dir, i)
            advance_to(ssc, clock, i)
        ssc.awaitTerminationOrTimeout(0)
        for i in range(1, 17):
            assert saved_totals(out, i) == oracle(i), f"interval {i}"
    finally:
        slow.release.set()
        ssc.stop(stopSparkContext=False)


def test_a_restart_while_a_slow_checkpoint_never_published_recovers_exactly(
    sc: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    in_dir, ckpt, out = (tmp_path / n for n in ("in", "ckpt", "out"))
    in_dir.mkdir()
    slow = SlowCheckpoint(monkeypatch)
    clock = ManualClock(T0)
    first = totals_program(sc, clock, in_dir, ckpt, out, remember="3s")
    first.start()
    try:
        for i in range(1, 13):
            put_interval_file(in_dir, i)
            advance_to(first, clock, i)
        # The driver dies before the checkpoint of 2 was ever published: a restarted
        # driver must replay every interval since the start from its recorded files.
        slow.fail = True
        slow.release.set()
        assert engine_of(first).checkpointer is not None and engine_of(
            first
        ).checkpointer.wait_idle(60)
    finally:
        slow.release.set()
        first.stop(stopSparkContext=False)
    slow.fail = False

    clock2 = ManualClock(T0 + 12 * B)
    resumed = StreamingContext.getOrCreate(
        str(ckpt),
        lambda: totals_program(sc, clock2, in_dir, ckpt, out, remember="3s"),
        sc,
        clock=clock2,
    )
    assert engine_of(resumed).restored_from is not None
    resumed.start()
    try:
        for i in range(13, 17):
            put_interval_file(in_dir, i)
            advance_to(resumed, clock2, i)
        resumed.awaitTerminationOrTimeout(0)
        for i in range(1, 17):
            assert saved_totals(out, i) == oracle(i), f"interval {i}"
    finally:
        resumed.stop(stopSparkContext=False)


def test_an_interval_whose_file_list_is_gone_is_an_error_not_a_new_listing(
    harness: Any, tmp_path: Path
) -> None:
    h: Harness = harness(start_ms=T0)
    h.ssc.textFileStream(str(tmp_path)).foreachRDD(lambda rdd: None)
    h.ssc.start()
    put_interval_file(tmp_path, 1)
    h.run_batches(2)
    source = engine_of(h.ssc).graph.inputs[0]
    first = Time(T0 + B)
    with source._lock:  # as if its record had been lost
        del source._batch_files[first]
        source._generated.pop(first, None)
    assert not source._can_compute(first)  # a state would not rebuild through it
    with pytest.raises(RuntimeError, match=r"whose file list is no longer kept .* cannot be"):
        source._read(first)


# ---- item 6: files with old modification times --------------------------------------------
class Inputs(StreamingListener):
    def __init__(self) -> None:
        self.metadata: list[dict[str, Any]] = []

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        infos = batchCompleted.batchInfo().streamIdToInputInfo()
        self.metadata.append({k: dict(v.metadata_) for k, v in infos.items()})


def test_old_files_are_taken_up_to_max_file_age_and_older_ones_reported_once(
    harness: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = StreamingSettings(file_remember="2s", max_file_age="60s")
    h: Harness = harness(start_ms=T0, settings=settings)
    put(tmp_path, "existing.txt", "existing\n", T0 - 5000)  # present at start: not new
    lines = h.ssc.textFileStream(str(tmp_path))
    out: list[list[str]] = []
    lines.foreachRDD(lambda rdd: out.append(sorted(rdd.collect())))
    inputs = Inputs()
    h.ssc.addStreamingListener(inputs)
    h.ssc.start()
    caplog.set_level(logging.INFO, logger="dstream.sources.files")

    put(tmp_path, "on-time.txt", "on time\n", T0 + 100)
    h.run_batches(1)
    # Moved in after start with old times (mv, rsync -t, cp -p, a NameNode clock behind):
    late = put(tmp_path, "late.txt", "late\n", T0 - 30_000)  # older than 2 s, newer than 60 s
    ancient = put(tmp_path, "ancient.txt", "ancient\n", T0 - 120_000)  # older than 60 s
    h.run_batches(1)
    h.run_batches(2)  # listed again twice: nothing is taken or reported again
    engine_of(h.ssc).bus.wait_until_empty(30)

    assert out == [["on time"], ["late"], [], []]
    source = engine_of(h.ssc).graph.inputs[0]
    skipped = [m[source.id].get("skipped") for m in inputs.metadata]
    counts = [m[source.id].get("skipped_count") for m in inputs.metadata]
    assert skipped == [[], [str(ancient)], [], []]
    assert counts == [0, 1, 0, 0]
    assert inputs.metadata[1][source.id]["files"] == [str(late)]
    warnings = [r.getMessage() for r in caplog.records if "ancient.txt" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert "max_file_age" in warnings[0] and "skipped" in warnings[0]
    taken_late = [r.getMessage() for r in caplog.records if "late.txt" in r.getMessage()]
    assert len(taken_late) == 1 and "file_remember" in taken_late[0], taken_late

    # The bookkeeping follows the directory: files gone from it are forgotten.
    for name in ("late.txt", "ancient.txt", "on-time.txt", "existing.txt"):
        (tmp_path / name).unlink()
    h.run_batches(4)
    assert source._decided == set()


def test_without_max_file_age_every_late_file_is_taken(harness: Any, tmp_path: Path) -> None:
    settings = StreamingSettings(file_remember="2s", max_file_age=None)
    h: Harness = harness(start_ms=T0, settings=settings)
    lines = h.ssc.textFileStream(str(tmp_path))
    out: list[list[str]] = []
    lines.foreachRDD(lambda rdd: out.append(sorted(rdd.collect())))
    h.ssc.start()
    put(tmp_path, "year-old.txt", "a year old\n", T0 - 365 * 86_400_000)
    h.run_batches(2)
    assert out == [["a year old"], []]


# ---- item 7: file names that Hadoop would expand or split ---------------------------------
NAMES = ["a[1].txt", "b{x,y}.txt", "c*.txt", "d?.txt", "e\\f.txt", "g,h.txt", "i{j.txt", "k}l.txt"]
# What each name would match (or be split into) as a Hadoop glob or a comma-separated list.
DECOYS = ["a1.txt", "bx.txt", "by.txt", "cX.txt", "dZ.txt", "ef.txt", "g", "h.txt", "ij.txt"]

Reader = Callable[[StreamingContext, str], Any]
READERS: dict[str, Reader] = {
    "textFileStream": lambda ssc, d: ssc.textFileStream(d),
    "fileStream": lambda ssc, d: ssc.fileStream(d, lambda p: p.endswith(".txt")),
    "binaryRecordsStream": lambda ssc, d: ssc.binaryRecordsStream(d, 16).map(
        lambda r: r.decode().rstrip()
    ),
    "textBatchStream": lambda ssc, d: ssc.textBatchStream(d).records(),
}


@pytest.mark.parametrize("kind", sorted(READERS))
def test_file_names_with_glob_characters_and_commas_are_read_exactly(
    harness: Any, tmp_path: Path, kind: str
) -> None:
    h: Harness = harness(start_ms=T0)
    for decoy in DECOYS:  # present before start, so never new: any of their lines is wrong
        put(tmp_path, decoy, f"decoy {decoy}".ljust(15) + "\n", T0 - 5000)
    stream = READERS[kind](h.ssc, str(tmp_path))
    out: list[str] = []
    stream.foreachRDD(lambda rdd: out.extend(rdd.collect()))
    h.ssc.start()
    for name in NAMES:
        put(tmp_path, name, f"file {name}".ljust(15) + "\n", T0 + 100)
    h.run_batches(1)
    expected = [f"file {name}" for name in NAMES]
    assert sorted(line.rstrip() for line in out) == sorted(expected)
