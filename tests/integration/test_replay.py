"""Replay: a program run live over files arriving during the run, then the same program
replayed over the same files, commits the same outputs, interval by interval."""

from __future__ import annotations

import operator
import os
import random
from pathlib import Path
from typing import Any

import pytest

from dstream import ManualClock, StreamingContext, StreamingListener, Time
from dstream.scheduler.engine import engine_of
from dstream.scheduler.replay_clock import parse_speed
from tests.replay_case import interval_dirs, staging_left, stateless, write_inputs

B = 1000
T0 = 1_800_000_000_000  # a batch boundary
WORDS = "alpha beta gamma delta epsilon".split()


def program(sc: Any, indir: Path, out: Path, clock: ManualClock | None = None) -> StreamingContext:
    ssc = StreamingContext(sc, 1, clock=clock)
    ssc.checkpoint(str(out / "ckpt"))
    lines = ssc.textFileStream(str(indir))
    lines.saveAsTextFiles(str(out / "lines"))
    pairs = lines.flatMap(str.split).map(lambda w: (w, 1))
    pairs.reduceByKeyAndWindow(operator.add, operator.sub, 3).saveAsTextFiles(str(out / "window"))
    pairs.updateStateByKey(lambda new, old: sum(new) + (old or 0)).checkpoint(2).saveAsTextFiles(
        str(out / "totals")
    )
    pairs.track(lambda k, e: e, lambda k, s, e: s + e, 2).saveAsTextFiles(str(out / "sessions"))
    return ssc


def committed(out: Path) -> dict[str, list[str]]:
    """Every committed interval's lines, by directory name (``window-<ms>``...)."""
    result = {}
    for d in sorted(out.iterdir()):
        if d.name.split("-")[0] in ("lines", "window", "totals", "sessions"):
            assert (d / "_DSTREAM_COMMIT").exists(), d
            result[d.name] = sorted(
                line for part in d.glob("part-*") for line in part.read_text().splitlines()
            )
    return result


def test_a_replay_commits_what_the_live_run_committed(sc: Any, tmp_path: Path) -> None:
    indir, live_out, replay_out = tmp_path / "in", tmp_path / "live", tmp_path / "replay"
    for d in (indir, live_out, replay_out):
        d.mkdir()
    rng = random.Random(5)
    intervals = 8
    clock = ManualClock(T0)
    live = program(sc, indir, live_out, clock)
    live.start()
    for i in range(intervals):  # files arrive during the run, each within its interval
        name = indir / f"f{i}.txt"
        name.write_text("\n".join(" ".join(rng.choices(WORDS, k=3)) for _ in range(4)) + "\n")
        at_ms = T0 + i * B + rng.randrange(B)
        os.utime(name, ns=(at_ms * 1_000_000,) * 2)
        clock.advance(B)
        assert live.wait_for_batch(clock.now(), 60)
    live.stop(stopSparkContext=False, stopGraceFully=True)

    report = StreamingContext.replay(
        lambda: program(sc, indir, replay_out), Time(T0), Time(T0 + intervals * B)
    )
    assert (report.first, report.last, report.intervals) == (
        Time(T0 + B),
        Time(T0 + intervals * B),
        intervals,
    )
    assert report.records == intervals * 4
    assert report.stretched == 0  # windows and state: one interval at a time
    want = committed(live_out)
    assert len(want) == 4 * intervals  # every output of every interval
    assert committed(replay_out) == want


def test_replay_arguments_are_checked(sc: Any, tmp_path: Path) -> None:
    assert parse_speed("max") is None and parse_speed("10x") == 10.0 and parse_speed("1.5x") == 1.5
    with pytest.raises(ValueError, match=r"replay speed 'fast' must be 'max' .* such as '1x'"):
        parse_speed("fast")
    (tmp_path / "in").mkdir()
    with pytest.raises(ValueError, match=r"replay end .* is before its begin"):
        StreamingContext.replay(lambda: program(sc, tmp_path / "in", tmp_path), 20, 10)

    def own_clock() -> StreamingContext:
        return program(sc, tmp_path / "in", tmp_path / "x", ManualClock(0))

    with pytest.raises(
        ValueError, match=r"set a clock of its own .* create the StreamingContext without one"
    ):
        StreamingContext.replay(own_clock, 10, 20)


# ---- a stateless stretch replayed as one job (dstream.scheduler.stretch) ---------------------
class _Batches(StreamingListener):
    def __init__(self) -> None:
        self.records: dict[int, int] = {}
        self.files: dict[int, list[str]] = {}

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        info = batchCompleted.batchInfo()
        ms = info.batchTime().milliseconds()
        self.records[ms] = info.numRecords()
        self.files[ms] = [
            f for i in info.streamIdToInputInfo().values() for f in i.metadata().get("files", [])
        ]


def test_a_stretched_replay_commits_what_a_replay_of_one_interval_at_a_time_commits(
    sc: Any, tmp_path: Path
) -> None:
    indir = tmp_path / "in"
    indir.mkdir()
    intervals = 13
    write_inputs(indir, intervals, random.Random(11))
    runs = {}
    for stretch in (1, 5):
        out = tmp_path / f"out{stretch}"
        out.mkdir()
        batches = _Batches()

        def setup(out: Path = out, stretch: int = stretch, batches: _Batches = batches) -> Any:
            ssc = stateless(sc, indir, out, stretch)
            ssc.addStreamingListener(batches)
            return ssc

        report = StreamingContext.replay(setup, Time(T0), Time(T0 + intervals * B))
        runs[stretch] = (report, interval_dirs(out), batches)
        # Nothing staged is left behind.
        assert staging_left(out) == []
    (one, one_dirs, one_batches), (five, five_dirs, five_batches) = runs[1], runs[5]
    assert one.stretched == 0
    # Stretches of 5 from the first interval; the one with the gzip file (the 7th) runs on
    # its own, the rest again in stretches: 1-5, 6, then 8-12 and 13 (a stretch of one
    # interval runs as live).
    assert five.stretched == 10
    assert len(one_dirs) == 3 * intervals
    assert five_dirs == one_dirs
    assert five.records == one.records > 0
    assert five_batches.records == one_batches.records
    assert five_batches.files == one_batches.files
    # The gzip file was decompressed, the byte order mark dropped, invalid UTF-8 replaced.
    counts = b"".join(
        line for d in five_dirs.values() if isinstance(d, list) for _, ls in d for line in ls
    )
    assert b"('zeta', 1)" in counts and b"\xef\xbb\xbf" not in counts
    assert "\ufffd".encode() in b"".join(d for d in five_dirs.values() if isinstance(d, bytes))


def test_a_program_that_keeps_state_is_not_stretched(sc: Any, tmp_path: Path) -> None:
    from dstream.scheduler.stretch import stretchable

    (tmp_path / "in").mkdir()
    ssc = program(sc, tmp_path / "in", tmp_path / "out", ManualClock(T0))
    try:
        ssc.start()
        why = stretchable(engine_of(ssc).graph)
        assert isinstance(why, str) and "remembers" in why, why
    finally:
        ssc.stop(stopSparkContext=False)
