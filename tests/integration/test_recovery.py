"""Driver recovery in one process: a program runs, its context is dropped as a crash would,
StreamingContext.getOrCreate rebuilds it from the metadata journal and the checkpoints, and
every interval's committed output equals that of a run without the failure.

Files carry explicit modification times, so which interval reads which file is fixed and the
two runs are compared interval by interval (the subprocess kill -9 tests in tests/cluster
compare unions, since real time decides there).
"""

from __future__ import annotations

import operator
import os
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from dstream import Duration, ManualClock, StreamingContext, StreamingSettings, Time
from dstream.errors import HaltedError
from dstream.scheduler.coordinator import BatchCoordinator, Position
from dstream.scheduler.engine import engine_of
from dstream.storage.filesystem import LocalFileSystem
from dstream.storage.journal import CheckpointDirectoryError, MetadataJournal

T0 = 1_700_000_000_000
B = 1000
TEXTS = [
    "to be or not to be",
    "be quick",
    "not now",
    "to do or not",
    "be be be",
    "quick now",
    "or not",
    "to be",
    "now or never",
    "never be quick",
    "do it now",
    "be",
]


def put(in_dir: Path, i: int) -> None:
    """File i lands in interval i: its modification time is inside [T0 + (i-1)B, T0 + iB)."""
    hidden = in_dir / f".f{i:02d}"
    hidden.write_text(TEXTS[i - 1] + "\n")
    mtime = (T0 + (i - 1) * B + 500) * 1_000_000
    os.utime(hidden, ns=(mtime, mtime))
    hidden.rename(in_dir / f"f{i:02d}.txt")


def program(
    sc: Any, clock: ManualClock, in_dir: Any, out: Any, ckpt: Any, strategy: str = "checkpoint"
) -> StreamingContext:
    """The program under test; its directories are local paths or URIs (hdfs://...). The
    window's recovery strategy is ``strategy`` (the totals' too where it can be)."""
    in_dir, out, ckpt = str(in_dir), str(out), str(ckpt)
    ssc = StreamingContext(sc, Duration(B), clock=clock)
    ssc.checkpoint(ckpt)
    words = ssc.textFileStream(in_dir).flatMap(str.split)
    pairs = words.map(lambda w: (w, 1))
    windowed = pairs.reduceByKeyAndWindow(operator.add, operator.sub, 3, 1)
    windowed.checkpoint(2).recoveryStrategy(strategy)
    windowed.saveAsTextFiles(f"{out}/window")
    totals = pairs.updateStateByKey(lambda new, old: (old or 0) + sum(new))
    totals.checkpoint(2)
    if strategy == "replicate":
        totals.recoveryStrategy(strategy, every=2)
    totals.saveAsTextFiles(f"{out}/totals")
    sessions = pairs.track(lambda k, e: 1, lambda k, s, e: s + 1, 100)
    sessions.checkpoint(2)
    sessions.saveAsTextFiles(f"{out}/track")
    words.saveAsTextFiles(f"{out}/words")
    return ssc


def expected_outputs(total: int) -> dict[str, list[str]]:
    """What :func:`program` commits over intervals 1..total, in plain Python: each output
    directory's sorted lines (the words, a 3 s window of counts without the keys whose count
    fell to 0, the running totals, and track()'s sessions, which count a key's events)."""
    result: dict[str, list[str]] = {}
    recent: list[Counter[str]] = []
    totals: Counter[str] = Counter()
    for i in range(1, total + 1):
        t = T0 + i * B
        words = TEXTS[i - 1].split()
        recent.append(Counter(words))
        totals.update(words)
        window = sum(recent[-3:], Counter())
        result[f"window-{t}"] = sorted(str(kv) for kv in window.items())
        result[f"totals-{t}"] = sorted(str(kv) for kv in totals.items())
        result[f"track-{t}"] = sorted(str(kv) for kv in totals.items())
        result[f"words-{t}"] = sorted(words)
    return result


def outputs(out: Path) -> dict[str, list[str]]:
    result = {}
    for name in sorted(os.listdir(out)):
        lines: list[str] = []
        for part in sorted((out / name).glob("part-*")):
            lines.extend(part.read_text().splitlines())
        result[name] = sorted(lines)
    return result


def run(ssc: StreamingContext, clock: ManualClock, upto: int) -> None:
    ssc.start()
    while clock.now().ms < T0 + upto * B:
        clock.advance(B)
    assert ssc.wait_for_batch(Time(T0 + upto * B), 120)
    ssc.awaitTerminationOrTimeout(0)  # raises if any interval failed


def hold_record_of(
    monkeypatch: pytest.MonkeyPatch, held: Time
) -> tuple[threading.Event, threading.Event]:
    """Hold the completion hook (the metadata record) of interval ``held`` once its jobs
    are done: the first event is set when it is held, setting the second lets it go."""
    entered, release = threading.Event(), threading.Event()
    journal_batch = BatchCoordinator.batch_completed

    def held_hook(self: BatchCoordinator, time: Time, position: Position) -> None:
        if time == held:
            entered.set()
            assert release.wait(120)
        journal_batch(self, time, position)

    monkeypatch.setattr(BatchCoordinator, "batch_completed", held_hook)
    return entered, release


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    d = {name: tmp_path / name for name in ("in", "out", "ckpt")}
    for path in d.values():
        path.mkdir()
    return d


@pytest.mark.parametrize(
    ("down_for", "strategy"),
    [(0, "checkpoint"), (3, "checkpoint"), (3, "replay"), (3, "replicate")],
)
def test_a_restarted_driver_resumes_with_identical_output(
    sc: Any, dirs: dict[str, Path], down_for: int, strategy: str
) -> None:
    total, crash_after = 12, 6
    for i in range(1, total + 1):
        put(dirs["in"], i)

    expected = expected_outputs(total)  # what a run without failures commits
    assert len(expected) == 4 * total

    # Crash after `crash_after` intervals: the context is abandoned, nothing is flushed.
    clock = ManualClock(T0)
    first = program(sc, clock, dirs["in"], dirs["out"], dirs["ckpt"], strategy)
    run(first, clock, crash_after)
    engine_of(first).checkpointer.wait_idle(60)
    first.stop(stopSparkContext=False)

    # The driver comes back `down_for` intervals later and catches up.
    clock2 = ManualClock(T0 + (crash_after + down_for) * B)
    setup_calls: list[int] = []

    def setup() -> StreamingContext:
        setup_calls.append(1)
        return program(sc, clock2, dirs["in"], dirs["out"], dirs["ckpt"], strategy)

    resumed = StreamingContext.getOrCreate(str(dirs["ckpt"]), setup, sc, clock=clock2)
    assert setup_calls == [] and (engine_of(resumed).restored_from is not None)
    if strategy == "replay":
        # The window was never checkpointed: the restart rebuilds it from the input files
        # its journaled low-water mark kept.
        window = next(
            s for s in engine_of(resumed).graph.streams if s.operator == "reduceByKeyAndWindow"
        )
        assert window.published_ms is None and window._restored_floor_ms is not None
    run(resumed, clock2, total)
    resumed.stop(stopSparkContext=False)

    got = outputs(dirs["out"])
    assert sorted(got) == sorted(expected)
    for name in expected:
        assert got[name] == expected[name], name


def test_changed_code_binds_state_by_name_or_explains_what_differs(
    sc: Any, dirs: dict[str, Path]
) -> None:
    for i in range(1, 5):
        put(dirs["in"], i)
    clock = ManualClock(T0)

    def build(partitions: int, name: str, kind: str = "update") -> StreamingContext:
        ssc = StreamingContext(sc, Duration(B), clock=clock)
        ssc.checkpoint(str(dirs["ckpt"]))
        pairs = ssc.textFileStream(str(dirs["in"])).flatMap(str.split).map(lambda w: (w, 1))
        if kind == "update":
            totals = pairs.updateStateByKey(lambda new, old: (old or 0) + sum(new), partitions)
        else:
            totals = pairs.track(lambda k, e: e, lambda k, s, e: s + e, 100, partitions)
        totals.setName(name).checkpoint(2)
        totals.saveAsTextFiles(str(dirs["out"] / "totals"))
        return ssc

    first = build(2, "totals")
    run(first, clock, 4)
    engine_of(first).checkpointer.wait_idle(60)
    first.stop(stopSparkContext=False)

    # (Another partition count is not such a change: updateStateByKey rescales; see
    # tests/integration/test_rescale.py.)
    with pytest.raises(
        ValueError,
        match=r"cannot be restored into the changed program \(kind: 'StateDStream' then, "
        r"'TrackDStream' now",
    ):
        StreamingContext.getOrCreate(
            str(dirs["ckpt"]), lambda: build(2, "totals", "track"), sc, rebuildGraph=True
        )
    with pytest.raises(
        ValueError, match=r"no stream named 'totals' whose state or input the checkpoint holds"
    ):
        StreamingContext.getOrCreate(
            str(dirs["ckpt"]), lambda: build(2, "renamed"), sc, rebuildGraph=True
        )

    put(dirs["in"], 5)
    resumed = StreamingContext.getOrCreate(
        str(dirs["ckpt"]), lambda: build(2, "totals"), sc, rebuildGraph=True
    )
    clock.advance(0)
    run(resumed, clock, 5)
    resumed.stop(stopSparkContext=False)
    final = outputs(dirs["out"])[f"totals-{T0 + 5 * B}"]
    words = " ".join(TEXTS[:5]).split()
    assert final == sorted(f"('{w}', {words.count(w)})" for w in set(words))


def test_a_checkpoint_directory_that_is_not_ours_is_refused(sc: Any, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(CheckpointDirectoryError, match="is not a dstream checkpoint directory"):
        StreamingContext.getOrCreate(str(tmp_path), lambda: StreamingContext(sc, 1), sc)
    ssc = StreamingContext(sc, 1)
    ssc.checkpoint(str(tmp_path))
    ssc.queueStream([[1]]).pprint()
    with pytest.raises(CheckpointDirectoryError, match="is not a dstream checkpoint directory"):
        ssc.start()
    assert os.listdir(tmp_path) == ["notes.txt"]


def test_a_fresh_program_in_a_used_directory_starts_afresh_and_sets_the_old_one_aside(
    sc: Any, dirs: dict[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    """Spark's stateful_network_wordcount.py run a second time: ``ssc.checkpoint(dir)``
    without getOrCreate starts a new program, as pyspark.streaming does. The old program's
    files are moved aside (its state never reaches the new one), one warning names
    getOrCreate, and a restart resumes the new program."""
    ckpt = dirs["ckpt"]
    for i in (1, 2):
        put(dirs["in"], i)
    clock = ManualClock(T0)
    first = program(sc, clock, dirs["in"], dirs["out"], ckpt)
    run(first, clock, 2)
    first.stop(stopSparkContext=False)
    old_latest = MetadataJournal(LocalFileSystem(), str(ckpt)).read_latest()
    assert old_latest is not None

    # The same program again over the same input and times: its totals must start from
    # nothing (with the old state they would count every word twice).
    clock = ManualClock(T0)
    second = program(sc, clock, dirs["in"], dirs["out"].with_name("out2"), ckpt)
    with caplog.at_level("WARNING", logger="dstream"):
        run(second, clock, 2)
    second.stop(stopSparkContext=False)
    assert outputs(dirs["out"].with_name("out2")) == outputs(dirs["out"])
    assert outputs(dirs["out"]) == expected_outputs(2)

    (warning,) = [r.getMessage() for r in caplog.records if "another streaming" in r.getMessage()]
    epoch = engine_of(second).lease.epoch  # type: ignore[union-attr]
    aside = ckpt / "previous" / f"before-epoch-{epoch:012d}"
    assert "\n" not in warning and f"getOrCreate('{ckpt}', setup)" in warning
    assert str(aside) in warning and f"epoch {old_latest.record.epoch} (pid" in warning
    names = {p.name for p in aside.iterdir()}
    assert "metadata" in names and not names & {"DSTREAM", "owners", "rdd-checkpoints"}
    moved = MetadataJournal(LocalFileSystem(), str(aside)).read_latest()
    assert moved is not None and moved.record == old_latest.record  # kept whole
    assert list(aside.glob("state-*/*")), "the old program's state checkpoints are set aside"

    # The directory now holds the second program alone: getOrCreate resumes it.
    latest = MetadataJournal(LocalFileSystem(), str(ckpt)).read_latest()
    assert latest is not None and latest.record.epoch == epoch
    assert latest.seq > old_latest.seq  # numbered after the records set aside
    resumed = StreamingContext.getOrCreate(
        str(ckpt), lambda: pytest.fail("the second program was not resumed"), sc
    )
    assert engine_of(resumed).restored_from == latest.record
    resumed.stop(stopSparkContext=False)


def test_a_program_still_running_in_the_directory_is_fenced_by_the_new_one(
    sc: Any, dirs: dict[str, Path]
) -> None:
    """The new program takes its epoch before it moves anything: a driver of the old
    program that is still running stops at its next record, writing nothing more."""
    put(dirs["in"], 1)
    old_clock = ManualClock(T0)
    old = program(sc, old_clock, dirs["in"], dirs["out"], dirs["ckpt"])
    run(old, old_clock, 1)
    clock = ManualClock(T0)
    new = program(sc, clock, dirs["in"], dirs["out"] / "new", dirs["ckpt"])
    run(new, clock, 1)
    try:
        old_clock.advance(B)
        with pytest.raises(HaltedError, match="another driver took over"):
            old.wait_for_batch(Time(T0 + 2 * B), 120)
    finally:
        old.stop(stopSparkContext=False)
    run_on(new, clock, 2)
    new.stop(stopSparkContext=False)
    latest = MetadataJournal(LocalFileSystem(), str(dirs["ckpt"])).read_latest()
    assert latest is not None and latest.record.epoch == engine_of(new).lease.epoch  # type: ignore[union-attr]
    assert latest.record.completed_ms == T0 + 2 * B
    assert not (dirs["out"] / f"words-{T0 + 2 * B}").exists()  # the old one committed nothing


def run_on(ssc: StreamingContext, clock: ManualClock, upto: int) -> None:
    """:func:`run` for a context already started."""
    while clock.now().ms < T0 + upto * B:
        clock.advance(B)
    assert ssc.wait_for_batch(Time(T0 + upto * B), 120)
    ssc.awaitTerminationOrTimeout(0)


def test_refusing_a_used_directory_stays_a_setting(sc: Any, dirs: dict[str, Path]) -> None:
    clock = ManualClock(T0)
    put(dirs["in"], 1)
    first = program(sc, clock, dirs["in"], dirs["out"], dirs["ckpt"])
    run(first, clock, 1)
    first.stop(stopSparkContext=False)
    second = StreamingContext(
        sc,
        Duration(B),
        clock=ManualClock(T0),
        settings=StreamingSettings(existing_checkpoint="refuse"),
    )
    second.checkpoint(str(dirs["ckpt"]))
    second.textFileStream(str(dirs["in"])).pprint()
    with pytest.raises(
        CheckpointDirectoryError,
        match=r"already holds the metadata of a streaming program, and StreamingSettings\("
        r"existing_checkpoint='refuse'\) keeps a new program from replacing it; resume it "
        r"with StreamingContext.getOrCreate",
    ):
        second.start()
    assert not (dirs["ckpt"] / "previous").exists()


def test_a_queue_stream_cannot_be_recovered(sc: Any, tmp_path: Path) -> None:
    clock = ManualClock(T0)

    def build() -> StreamingContext:
        ssc = StreamingContext(sc, Duration(B), clock=clock)
        ssc.checkpoint(str(tmp_path))
        ssc.queueStream([[1], [2]]).pprint()
        return ssc

    first = build()
    run(first, clock, 1)
    first.stop(stopSparkContext=False)
    resumed = StreamingContext.getOrCreate(str(tmp_path), build, sc, clock=clock)
    with pytest.raises(
        ValueError,
        match="cannot be recovered after a driver failure: its RDDs lived in the old driver",
    ):
        resumed.start()


def test_a_metadata_record_that_cannot_be_renamed_stops_the_program_loudly(
    sc: Any, dirs: dict[str, Path]
) -> None:
    """A squatter on the next record's name makes the rename fail: the engine stops
    generating intervals and awaitTermination says why — it never carries on unjournaled."""
    for i in range(1, 4):
        put(dirs["in"], i)
    clock = ManualClock(T0)
    ssc = program(sc, clock, dirs["in"], dirs["out"], dirs["ckpt"])
    run(ssc, clock, 1)
    meta = dirs["ckpt"] / "metadata"
    newest = max(int(n.split("-")[1]) for n in os.listdir(meta) if n.startswith("record-"))
    squatter = meta / f"record-{newest + 1:012d}"
    squatter.write_text("not a record")
    clock.advance(B)
    with pytest.raises(HaltedError, match=r"stopped generating intervals.*destination exists"):
        ssc.wait_for_batch(Time(T0 + 2 * B), 60)
    with pytest.raises(HaltedError, match=r"stopped generating intervals.*destination exists"):
        ssc.awaitTerminationOrTimeout(60)
    assert squatter.read_text() == "not a record"  # never overwritten
    # The interval whose record failed was generated but none of its jobs ran: nothing is
    # output without its record.
    assert engine_of(ssc).scheduler.halted is not None
    assert engine_of(ssc).scheduler.pending() == [Time(T0 + 2 * B)]
    assert max(engine_of(ssc).scheduler.completed_batches) == Time(T0 + B)
    assert not (dirs["out"] / f"words-{T0 + 2 * B}").exists()
    ssc.stop(stopSparkContext=False)


def test_a_batch_counts_as_complete_once_its_metadata_record_is_written(
    sc: Any, dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """wait_for_batch (what tests, the shell and the fault runner wait on) returns only after
    the completion hook that journals the batch has run, not when its jobs are done."""
    put(dirs["in"], 1)
    clock = ManualClock(T0)
    ssc = program(sc, clock, dirs["in"], dirs["out"], dirs["ckpt"])
    hook_entered, release = hold_record_of(monkeypatch, Time(T0 + B))
    ssc.start()
    clock.advance(B)
    assert hook_entered.wait(120)  # every job of T0 + B is done, its record is not written
    try:
        assert not ssc.wait_for_batch(Time(T0 + B), 0.5)
    finally:
        release.set()
    assert ssc.wait_for_batch(Time(T0 + B), 120)
    latest = MetadataJournal(LocalFileSystem(), str(dirs["ckpt"])).read_latest()
    ssc.stop(stopSparkContext=False)
    assert latest is not None
    assert latest.record.completed_ms == T0 + B


def test_a_graceful_stop_behind_a_backlog_finishes_what_runs_and_leaves_the_rest_to_a_restart(
    sc: Any, dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    """stop(stopGraceFully=True) while interval 1 runs and 2-6 are due: interval 1
    finishes and commits, 2-6 are not generated (their files stay on record as unread) and
    the stop says so; a driver restarted from the checkpoint runs them, and every interval
    equals a run without the stop. Before, a graceful stop ran every due interval (60-69 s
    of them in one run, most of them empty) and then gave up."""
    for i in range(1, 7):
        put(dirs["in"], i)
    clock = ManualClock(T0)
    first = program(sc, clock, dirs["in"], dirs["out"], dirs["ckpt"])
    hook_entered, release = hold_record_of(monkeypatch, Time(T0 + B))
    first.start()
    clock.advance(B)
    assert hook_entered.wait(120)  # interval 1 is done but for its record
    for _ in range(5):
        clock.advance(B)  # 2-6 are due behind it
    scheduler = engine_of(first).scheduler
    assert scheduler is not None
    pause = threading.Event()
    timer = scheduler._timer
    while timer.next_time is None or timer.next_time <= Time(T0 + 6 * B):
        pause.wait(0.01)  # until the timer posted 2-6 (the loop, held, has not taken them)
    stopper = threading.Thread(
        target=lambda: first.stop(stopSparkContext=False, stopGraceFully=True)
    )
    with caplog.at_level("INFO", logger="dstream.scheduler.scheduler"):
        stopper.start()
        while not scheduler._draining:
            stopper.join(0.01)
        release.set()
        stopper.join(120)
    assert not stopper.is_alive()
    assert sorted(os.listdir(dirs["out"])) == sorted(
        f"{name}-{T0 + B}" for name in ("window", "totals", "track", "words")
    )
    said = " ".join(r.getMessage() for r in caplog.records)
    assert "graceful stop: 1 generated intervals finished" in said, said
    assert "5 due intervals were not generated" in said, said
    assert f"a driver restarted from {dirs['ckpt']}" in said, said

    monkeypatch.undo()
    clock2 = ManualClock(T0 + 6 * B)
    resumed = StreamingContext.getOrCreate(str(dirs["ckpt"]), lambda: None, sc, clock=clock2)
    run(resumed, clock2, 6)
    resumed.stop(stopSparkContext=False)
    assert outputs(dirs["out"]) == expected_outputs(6)
