"""A driver that dies between ``start()`` and its first interval: the restarted driver resumes
the same program (its zero time, where each source started) and reads every record that
arrived since the first start, instead of starting a new program that counts that input as
already there.

Deterministic form of a kill -9 inside the first interval: the first context starts on a
ManualClock and is abandoned before its first tick; input arrives; ``getOrCreate`` on a
clock five intervals later must produce the intervals from the first start on.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from dstream import Duration, ManualClock, StreamingContext, Time
from dstream.scheduler.engine import engine_of
from dstream.storage.filesystem import LocalFileSystem
from dstream.storage.journal import CheckpointDirectoryError, MetadataJournal
from dstream.storage.ownership import claim

T0 = 1_700_000_000_000
B = 1000


def committed(out: Path, prefix: str) -> dict[int, list[str]]:
    found = {}
    for d in out.glob(f"{prefix}-*"):
        lines = [ln for p in sorted(d.glob("part-*")) for ln in p.read_text().splitlines()]
        found[int(d.name.rsplit("-", 1)[1])] = sorted(lines)
    return found


def put(in_dir: Path, name: str, text: str, mtime_ms: int) -> None:
    hidden = in_dir / f".{name}"
    hidden.write_text(text)
    os.utime(hidden, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    hidden.rename(in_dir / name)


def crash_before_the_first_interval(ssc: StreamingContext) -> None:
    """Start, then drop the context as a kill would, before any interval was generated."""
    ssc.start()
    assert engine_of(ssc).completed_time() is None
    ssc.stop(stopSparkContext=False)


def run_to(ssc: StreamingContext, clock: ManualClock, upto_ms: int) -> None:
    ssc.start()
    while clock.now().ms < upto_ms:
        clock.advance(B)
    assert ssc.wait_for_batch(Time(upto_ms), 120)
    ssc.awaitTerminationOrTimeout(0)
    ssc.stop(stopSparkContext=False)


def test_files_that_arrive_before_the_first_interval_are_read_after_a_restart(
    sc: Any, tmp_path: Path
) -> None:
    in_dir, out, ckpt = tmp_path / "in", tmp_path / "out", tmp_path / "ckpt"
    in_dir.mkdir()
    put(in_dir, "old.txt", "there before the start\n", T0 - 5 * B)

    def setup(clock: ManualClock) -> StreamingContext:
        ssc = StreamingContext(sc, Duration(B), clock=clock)
        ssc.checkpoint(str(ckpt))
        ssc.textFileStream(str(in_dir)).saveAsTextFiles(f"{out}/lines")
        return ssc

    first_clock = ManualClock(T0 + 200)
    crash_before_the_first_interval(setup(first_clock))

    # Input lands while the driver is down, in what the first start made intervals 1 to 3.
    for i in range(1, 4):
        put(in_dir, f"f{i}.txt", f"line {i}\n", T0 + (i - 1) * B + 500)

    clock = ManualClock(T0 + 5 * B + 200)
    ssc = StreamingContext.getOrCreate(str(ckpt), lambda: setup(clock), clock=clock)
    assert engine_of(ssc).restored_from is not None, "the first start left no record of its program"
    run_to(ssc, clock, T0 + 6 * B)

    lines = committed(out, "lines")
    assert sorted(lines) == [T0 + i * B for i in range(1, 7)]  # from the first start on
    assert lines[T0 + B] == ["line 1"]
    assert lines[T0 + 2 * B] == ["line 2"]
    assert lines[T0 + 3 * B] == ["line 3"]
    assert all(lines[T0 + i * B] == [] for i in range(4, 7))  # and the old file never


def test_the_rate_source_resumes_from_the_first_start(sc: Any, tmp_path: Path) -> None:
    ckpt, out = tmp_path / "ckpt", tmp_path / "out"

    def setup(clock: ManualClock) -> StreamingContext:
        ssc = StreamingContext(sc, Duration(B), clock=clock)
        ssc.checkpoint(str(ckpt))
        ssc.rateStream(20, numPartitions=2, seed=3).saveAsTextFiles(f"{out}/rate")
        return ssc

    crash_before_the_first_interval(setup(ManualClock(T0 + 200)))
    clock = ManualClock(T0 + 3 * B + 200)
    ssc = StreamingContext.getOrCreate(str(ckpt), lambda: setup(clock), clock=clock)
    run_to(ssc, clock, T0 + 4 * B)
    got = committed(out, "rate")
    assert sorted(got) == [T0 + i * B for i in range(1, 5)]
    assert all(len(lines) == 20 for lines in got.values())

    # The same intervals as a run that never crashed.
    ref_ckpt, ref_out = tmp_path / "ref_ckpt", tmp_path / "ref_out"
    clock = ManualClock(T0 + 200)
    ref = StreamingContext(sc, Duration(B), clock=clock)
    ref.checkpoint(str(ref_ckpt))
    ref.rateStream(20, numPartitions=2, seed=3).saveAsTextFiles(f"{ref_out}/rate")
    run_to(ref, clock, T0 + 4 * B)
    assert committed(ref_out, "rate") == got


def test_a_directory_taken_by_a_driver_that_left_no_record_is_refused_loudly(
    sc: Any, tmp_path: Path
) -> None:
    """A driver killed inside start(), after it took the directory and before it recorded
    its program: a restart says so instead of silently starting a new program."""
    ckpt = tmp_path / "ckpt"
    journal = MetadataJournal(LocalFileSystem(), str(ckpt))
    journal.check_directory(create=True)
    claim(LocalFileSystem(), str(ckpt))

    def setup() -> StreamingContext:
        return StreamingContext(sc, Duration(B), clock=ManualClock(T0))

    with pytest.raises(CheckpointDirectoryError, match=r"epoch 1 .*died inside start\(\)"):
        StreamingContext.getOrCreate(str(ckpt), setup)


def test_a_start_that_fails_gives_the_directory_back(sc: Any, tmp_path: Path) -> None:
    """A start() refused part-way (a receiver's port taken) leaves no lease behind, so the
    next attempt starts normally."""
    import socket

    from dstream.receiver import createStream

    ckpt = tmp_path / "ckpt"
    taken = socket.create_server(("127.0.0.1", 0))
    port = taken.getsockname()[1]

    def setup() -> StreamingContext:
        ssc = StreamingContext(sc, Duration(B), clock=ManualClock(T0))
        ssc.checkpoint(str(ckpt))
        createStream(ssc, secret=b"s" * 16, port=port).pprint()
        return ssc

    try:
        with pytest.raises(OSError, match="cannot listen"):
            StreamingContext.getOrCreate(str(ckpt), setup).start()
    finally:
        taken.close()
    assert not list((ckpt / "owners").iterdir())
    ssc = StreamingContext.getOrCreate(str(ckpt), setup)
    ssc.start()
    ssc.stop(stopSparkContext=False)
