"""approximateRecovery() on the session's local[2] context, a ManualClock driving it: the
state is exact until a block is lost; a lost block is restored from the partition's copy
within its bound (Θ = 0: exactly); the restores are journaled and a restarted driver that
folds those intervals again gives the live run's states; users never see the bookkeeping.

Blocks are lost here by unpersisting the previous interval's cached state behind the
engine's back (what the block manager master then reports is what an executor's death
leaves); tests/cluster/test_approximate.py kills executor JVMs for real.
"""

from __future__ import annotations

import operator
import os
import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from dstream import Duration, ManualClock, StreamingContext, StreamingSettings, Time
from dstream.scheduler.engine import engine_of
from dstream.streams.keyed_state import ApproximatedState

T0 = 1_700_000_000_000
B = 1000
PARTITIONS = 2


def lines_of(i: int) -> list[str]:
    """Interval i's lines: Zipf-like words, the same every run."""
    rng = random.Random(i)
    return [
        " ".join(f"w{min(int(rng.paretovariate(1.1)), 80)}" for _ in range(12)) for _ in range(4)
    ]


def put(in_dir: Path, i: int) -> None:
    hidden = in_dir / f".f{i:02d}"
    hidden.write_text("\n".join(lines_of(i)) + "\n")
    mtime = (T0 + (i - 1) * B + 500) * 1_000_000
    os.utime(hidden, ns=(mtime, mtime))
    hidden.rename(in_dir / f"f{i:02d}.txt")


def exact(upto: int) -> dict[int, dict[str, int]]:
    totals: Counter[str] = Counter()
    out = {}
    for i in range(1, upto + 1):
        totals.update(w for line in lines_of(i) for w in line.split())
        out[T0 + i * B] = dict(totals)
    return out


def exact_track(upto: int, timeout: int) -> dict[int, dict[str, int]]:
    """track()'s word counts: a word with no event for ``timeout`` intervals is dropped."""
    totals: dict[str, int] = {}
    last: dict[str, int] = {}
    out = {}
    for i in range(1, upto + 1):
        for w in (w for line in lines_of(i) for w in line.split()):
            totals[w], last[w] = totals.get(w, 0) + 1, i
        for w in [w for w, at in last.items() if at <= i - timeout]:
            del totals[w], last[w]
        out[T0 + i * B] = dict(totals)
    return out


class Program:
    """The program under test: running word counts under approximateRecovery(theta), by
    updateStateByKey or (``track_timeout``: intervals) by track()."""

    def __init__(
        self,
        sc: Any,
        root: Path,
        theta: float,
        clock: ManualClock,
        track_timeout: int | None = None,
        every: int = 4,
    ) -> None:
        self.states: dict[int, dict[str, int]] = {}
        self.track_timeout, self.every = track_timeout, every
        self.ssc = StreamingContext.getOrCreate(
            str(root / "ckpt"), lambda: self._setup(sc, root, theta, clock), sc, clock=clock
        )
        self.clock = clock
        if engine_of(self.ssc).restored_from is not None:  # the outputs are not journaled
            node = self.node
            node.graph.outputs[0]._fn = self._collect

    def _setup(self, sc: Any, root: Path, theta: float, clock: ManualClock) -> StreamingContext:
        ssc = StreamingContext(sc, Duration(B), clock=clock)
        ssc.checkpoint(str(root / "ckpt"))
        pairs = ssc.textFileStream(str(root / "in")).flatMap(str.split).map(lambda w: (w, 1))
        if self.track_timeout is None:
            totals = pairs.updateStateByKey(lambda new, old: (old or 0) + sum(new), PARTITIONS)
        else:
            timeout = Duration(self.track_timeout * B)
            totals = pairs.track(lambda k, e: e, lambda k, s, e: s + e, timeout, PARTITIONS)
        totals.checkpoint(self.every).approximateRecovery(theta)
        totals.foreachRDD(self._collect)
        return ssc

    def _collect(self, time: Time, rdd: Any) -> None:
        self.states[time.ms] = dict(rdd.collect())

    @property
    def node(self) -> ApproximatedState:
        streams = engine_of(self.ssc).graph.streams
        (node,) = [s for s in streams if isinstance(s, ApproximatedState)]
        return node

    def run(self, upto: int, lose_after: tuple[int, ...] = ()) -> None:
        if engine_of(self.ssc).state != "active":
            self.ssc.start()
        while self.clock.now().ms < T0 + upto * B:
            self.clock.advance(B)
            now = self.clock.now()
            assert self.ssc.wait_for_batch(now, 120), now
            if (now.ms - T0) // B in lose_after:
                # As an executor's death: the cached blocks of this interval's state go.
                state = self.node.state_rdd(now)
                assert state is not None
                state.unpersist(blocking=True)
        self.ssc.awaitTerminationOrTimeout(0)  # raises if an interval failed


@pytest.fixture
def place(tmp_path: Path) -> Path:
    (tmp_path / "in").mkdir()
    for i in range(1, 13):
        put(tmp_path / "in", i)
    return tmp_path


def error(got: dict[str, int], want: dict[str, int]) -> int:
    return sum(abs(got.get(k, 0) - want.get(k, 0)) for k in got.keys() | want.keys())


def test_without_a_loss_the_state_is_exact_and_its_bookkeeping_stays_inside(
    sc: Any, place: Path
) -> None:
    p = Program(sc, place, 8.0, ManualClock(T0))
    try:
        p.run(6)
        assert p.states == exact(6)
        # A live query reads the state as users see it, without the META records.
        assert dict(p.node.pinned(Time(T0 + 6 * B)).collect()) == exact(6)[T0 + 6 * B]
        progress = p.ssc.lastProgress
        assert progress is not None
        (entry,) = [s for s in progress["stateOperators"] if "approximateRecovery" in s]
        approx = entry["approximateRecovery"]
        assert approx["maxDivergence"] == 8.0 and approx["divergence"] == "l1"
        assert approx["copyBytes"] > 0 and approx["restoredPartitions"] == 0
    finally:
        p.ssc.stop(stopSparkContext=False)
    copies = sorted((place / "ckpt").glob("approx-*/*/*"))
    assert {c.suffix for c in copies} <= {".delta", ".base"} and copies


@pytest.mark.parametrize("theta", [0.0, 400.0])
def test_a_lost_state_is_restored_from_its_copies_within_the_bound(
    sc: Any, place: Path, theta: float
) -> None:
    p = Program(sc, place, theta, ManualClock(T0))
    try:
        p.run(10, lose_after=(3, 6, 7))
        restored = p.node._tracker.restored
    finally:
        p.ssc.stop(stopSparkContext=False)
    assert restored == 3 * PARTITIONS  # both partitions, three times
    want = exact(10)
    errors = [error(p.states[t], want[t]) for t in sorted(want)]
    if theta == 0:
        assert errors == [0] * 10
    else:
        # Nothing lost before the first loss; after it, never more than Θ in all.
        assert errors[:3] == [0, 0, 0] and max(errors) <= theta and max(errors) > 0, errors


@pytest.mark.parametrize("theta", [0.0, 400.0])
def test_a_lost_track_partition_is_restored_from_its_copies_within_the_bound(
    sc: Any, place: Path, theta: float
) -> None:
    """track() with a timeout of 3 intervals (rare words time out) and a snapshot every 2:
    the deltas move onto each new snapshot in their tasks, and a lost one is restored from
    the partition's copy plus the interval, nothing folded again."""
    p = Program(sc, place, theta, ManualClock(T0), track_timeout=3, every=2)
    try:
        p.run(8, lose_after=(3, 5))
        restored = p.node._tracker.restored
    finally:
        p.ssc.stop(stopSparkContext=False)
    assert restored == 2 * PARTITIONS
    want = exact_track(8, 3)
    errors = [error(p.states[t], want[t]) for t in sorted(want)]
    if theta == 0:
        assert errors == [0] * 8
    else:
        assert errors[:3] == [0, 0, 0] and max(errors) <= theta and max(errors) > 0, errors


def test_a_restarted_driver_replays_the_restores_it_journaled(sc: Any, place: Path) -> None:
    """The checkpoint at 4, a restore at 6, the driver gone after 7: the new driver folds 5-7
    from the checkpoint, restoring 6 from the same copy, and every state after equals the
    run that never restarted."""
    theta = 400.0
    reference_root = place / "reference"
    (reference_root / "in").mkdir(parents=True)
    for i in range(1, 13):
        put(reference_root / "in", i)
    reference = Program(sc, reference_root, theta, ManualClock(T0))
    try:
        reference.run(10, lose_after=(5,))
    finally:
        reference.ssc.stop(stopSparkContext=False)
    assert error(reference.states[T0 + 6 * B], exact(6)[T0 + 6 * B]) > 0, "nothing was lost"

    first = Program(sc, place, theta, ManualClock(T0))
    try:
        first.run(7, lose_after=(5,))
        engine_of(first.ssc).checkpointer.wait_idle(60)
    finally:
        first.ssc.stop(stopSparkContext=False)  # as a crash: nothing more is written
    second = Program(sc, place, theta, ManualClock(T0 + 7 * B))
    try:
        assert engine_of(second.ssc).restored_from is not None
        assert second.node._tracker.restores == {
            T0 + 6 * B: first.node._tracker.restores[T0 + 6 * B]
        }
        second.run(10)
    finally:
        second.ssc.stop(stopSparkContext=False)
    assert {**first.states, **second.states} == reference.states


def test_what_cannot_be_recovered_approximately_is_refused(sc: Any) -> None:
    ssc = StreamingContext(sc, 1)
    pairs = ssc.queueStream([[("a", 1)]]).map(lambda kv: kv)
    window = pairs.reduceByKeyAndWindow(operator.add, operator.sub, 3, 1)
    with pytest.raises(ValueError, match=r"changes every key's value each interval.*replay"):
        window.approximateRecovery(10)
    with pytest.raises(ValueError, match=r"keeps no state between intervals"):
        pairs.approximateRecovery(10)
    totals = pairs.updateStateByKey(lambda new, old: (old or 0) + sum(new))
    for bad in (-1, float("inf"), "10", True):
        with pytest.raises(ValueError, match=r"must be a finite number >= 0"):
            totals.approximateRecovery(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"divergence='nope'.*'l1'"):
        totals.approximateRecovery(10, "nope")
    totals.approximateRecovery(10)
    with pytest.raises(ValueError, match=r"cannot be combined with|already restores"):
        totals.recoveryStrategy("replicate")
    with pytest.raises(ValueError, match=r"partition count is fixed"):
        totals.rescale(4)
    totals.foreachRDD(lambda rdd: None)
    # track() too: a fixed partition count (its own rule), and one recovery at a time.
    sessions = pairs.track(lambda k, e: e, lambda k, s, e: s + e, 3)
    for bad in (-1, "10"):
        with pytest.raises(ValueError, match=r"must be a finite number >= 0"):
            sessions.approximateRecovery(bad)  # type: ignore[arg-type]
    sessions.approximateRecovery(10)
    with pytest.raises(ValueError, match=r"rescale\(4\) of track.*snapshot files.*fixed"):
        sessions.rescale(4)
    with pytest.raises(ValueError, match=r"already restores"):
        sessions.recoveryStrategy("replicate")
    sessions.foreachRDD(lambda rdd: None)
    ssc.stop(stopSparkContext=False)

    pipelined = StreamingContext(sc, 1, settings=StreamingSettings(pipelining_depth=2))
    state = pipelined.queueStream([[("a", 1)]]).updateStateByKey(lambda n, o: 1)
    state.approximateRecovery(1).foreachRDD(lambda rdd: None)
    try:
        with pytest.raises(ValueError, match=r"pipelining_depth=1"):
            pipelined.start()
    finally:
        pipelined.stop(stopSparkContext=False)


def test_copies_no_restore_can_read_are_deleted_at_each_checkpoint(
    sc: Any, place: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bases every few intervals (a small threshold for them): once a checkpoint is
    published, each partition keeps its copies from its newest base on, and a restore
    after that reads them exactly (Θ = 0)."""
    from dstream.tasks import approx_state

    monkeypatch.setattr(approx_state, "MIN_BASE_BYTES", 600)
    p = Program(sc, place, 0.0, ManualClock(T0))
    try:
        p.run(12, lose_after=(11,))
        engine_of(p.ssc).checkpointer.wait_idle(60)
        assert p.node._tracker.restored == PARTITIONS
    finally:
        p.ssc.stop(stopSparkContext=False)
    assert p.states == exact(12)
    for directory in sorted((place / "ckpt").glob("approx-*/*")):
        kinds = [name.suffix for name in sorted(directory.iterdir())]
        assert kinds[0] == ".base" and ".delta" in kinds, (directory, kinds)
        assert kinds.count(".base") < 3, kinds  # the older ones went
