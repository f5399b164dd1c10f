"""Elastic keyed state: ``rescale(n)`` changes an updateStateByKey or window state's
partition count from the next interval, exactly (every interval's totals and windows equal a
run that never rescaled),
doubling and halving without a shuffle of the state, and a driver restarted from a
checkpoint taken before a rescale replays forward at the journaled counts, even when the
restarted program asks for yet another count."""

from __future__ import annotations

import operator
from pathlib import Path
from typing import Any

import pytest

from dstream import Duration, ManualClock, StreamingContext, Time
from dstream.dstream import handle_for
from dstream.scheduler.engine import engine_of

from .test_recovery import T0, TEXTS, B, expected_outputs, outputs, put

TOTAL = 12


def program(
    sc: Any, clock: ManualClock, dirs: dict[str, Path], partitions: int = 4
) -> StreamingContext:
    ssc = StreamingContext(sc, Duration(B), clock=clock)
    ssc.checkpoint(str(dirs["ckpt"]))
    pairs = ssc.textFileStream(str(dirs["in"])).flatMap(str.split).map(lambda w: (w, 1))
    totals = pairs.updateStateByKey(
        lambda new, old: (old or 0) + sum(new), numPartitions=partitions
    )
    totals.setName("totals").checkpoint(4)
    totals.saveAsTextFiles(f"{dirs['out']}/totals")
    window = pairs.reduceByKeyAndWindow(operator.add, operator.sub, 3, 1, partitions)
    window.setName("window").checkpoint(4)
    window.saveAsTextFiles(f"{dirs['out']}/window")
    return ssc


def expected_totals() -> dict[str, list[str]]:
    """The running totals and the 3 s windows of every interval (test_recovery's oracle)."""
    return {
        name: lines
        for name, lines in expected_outputs(TOTAL).items()
        if name.startswith(("totals-", "window-"))
    }


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    d = {name: tmp_path / name for name in ("in", "out", "ckpt")}
    for path in d.values():
        path.mkdir()
    for i in range(1, TOTAL + 1):
        put(d["in"], i)
    return d


def advance(ssc: StreamingContext, clock: ManualClock, upto: int) -> None:
    while clock.now().ms < T0 + upto * B:
        clock.advance(B)
    assert ssc.wait_for_batch(Time(T0 + upto * B), 120)
    ssc.awaitTerminationOrTimeout(0)


def state_of(ssc: StreamingContext, kind: str = "StateDStream") -> Any:
    """The user's handle over the program's state node of type ``kind``."""
    return handle_for(next(s for s in engine_of(ssc).graph.streams if type(s).__name__ == kind))


def test_doubling_then_halving_the_state_changes_no_total(sc: Any, dirs: dict[str, Path]) -> None:
    clock = ManualClock(T0)
    ssc = program(sc, clock, dirs)
    state = state_of(ssc)
    counts: dict[int, int] = {}
    lineage: dict[int, str] = {}

    def watch(t: Any, rdd: Any) -> None:
        counts[(t.ms - T0) // B] = rdd.getNumPartitions()
        lineage[(t.ms - T0) // B] = rdd.toDebugString().decode()

    state.foreachRDD(watch)
    window = state_of(ssc, "ReducedWindowedDStream")
    try:
        ssc.start()
        advance(ssc, clock, 4)
        assert state.rescale(8) == Time(T0 + 5 * B)  # from the next interval
        assert window.rescale(8) == Time(T0 + 5 * B)
        advance(ssc, clock, 8)
        # A point lookup reads the one partition of the key at the state's count now (8).
        be = sum(text.split().count("be") for text in TEXTS[:8])
        assert state.lookup("be") == [be] and be > 0
        assert state.rescale(4) == Time(T0 + 9 * B)
        assert window.rescale(2) == Time(T0 + 9 * B)
        advance(ssc, clock, TOTAL)
    finally:
        ssc.stop(stopSparkContext=False)
    assert outputs(dirs["out"]) == expected_totals()
    assert counts == {i: 4 if i <= 4 or i >= 9 else 8 for i in range(1, TOTAL + 1)}
    # The rescale intervals regroup the cached state narrowly (the shim's Rescaled RDD,
    # whose tasks read one or two old partitions), not through a shuffle of the state.
    for i in (5, 9):
        assert "Rescaled" in lineage[i], lineage[i]
    assert "Rescaled" not in lineage[4]
    assert state._node.journal_state()["partitions"] == [(0, 4), (T0 + 5 * B, 8), (T0 + 9 * B, 4)]
    assert window._node.schedule.steps() == [(0, 4), (T0 + 5 * B, 8), (T0 + 9 * B, 2)]


def test_a_count_no_narrow_plan_serves_is_reached_by_one_shuffle(
    sc: Any, dirs: dict[str, Path]
) -> None:
    clock = ManualClock(T0)
    ssc = program(sc, clock, dirs)
    state = state_of(ssc)
    try:
        ssc.start()
        advance(ssc, clock, 3)
        state.rescale(3)  # 4 -> 3: each new partition could draw on all four
        # A window regroups without a shuffle even so: each new partition reads all four.
        state_of(ssc, "ReducedWindowedDStream").rescale(3)
        advance(ssc, clock, 6)
    finally:
        ssc.stop(stopSparkContext=False)
    got = outputs(dirs["out"])
    want = expected_totals()
    assert {k: got[k] for k in got} == {k: want[k] for k in got} and len(got) == 12


@pytest.mark.parametrize("restart_with", [8, 2])
def test_a_restart_from_before_a_rescale_replays_forward_at_the_journaled_counts(
    sc: Any, dirs: dict[str, Path], restart_with: int
) -> None:
    # Checkpoints every 4 s: the last one before the crash (at 4) has 4 partitions, the
    # rescale to 8 took effect at 6, and the driver dies after 7.
    clock = ManualClock(T0)
    first = program(sc, clock, dirs)
    try:
        first.start()
        advance(first, clock, 5)
        state_of(first).rescale(8)
        advance(first, clock, 7)
        engine_of(first).checkpointer.wait_idle(60)
    finally:
        first.stop(stopSparkContext=False)

    # The restarted program asks for `restart_with` partitions (rebuildGraph: the code
    # changed); the journal's counts are kept for the intervals they covered.
    clock2 = ManualClock(T0 + 7 * B)
    resumed = StreamingContext.getOrCreate(
        str(dirs["ckpt"]),
        lambda: program(sc, clock2, dirs, partitions=restart_with),
        sc,
        clock=clock2,
        rebuildGraph=True,
    )
    state = state_of(resumed)
    assert state._node.schedule.at(T0 + 4 * B) == 4 and state._node.schedule.at(T0 + 7 * B) == 8
    assert state_of(resumed, "ReducedWindowedDStream")._node.schedule.at(T0 + 7 * B) == 4
    counts: dict[int, int] = {}
    state.foreachRDD(lambda t, rdd: counts.__setitem__((t.ms - T0) // B, rdd.getNumPartitions()))
    try:
        resumed.start()
        advance(resumed, clock2, TOTAL)
    finally:
        resumed.stop(stopSparkContext=False)
    assert outputs(dirs["out"]) == expected_totals()
    assert set(counts.values()) == {restart_with}


def test_rescale_is_refused_where_partitions_are_fixed(harness: Any) -> None:
    h = harness()
    pairs = h.ssc.rateStream(10, numPartitions=1, seed=3).map(lambda line: (line[:1], 1))
    sessions = pairs.track(lambda k, e: 1, lambda k, s, e: s + 1, 3)
    with pytest.raises(ValueError, match="track\\(\\)'s partitions are snapshot files"):
        sessions.rescale(4)
    with pytest.raises(ValueError, match="keeps no state between intervals"):
        pairs.rescale(4)
    totals = pairs.updateStateByKey(lambda new, old: (old or 0) + sum(new))
    with pytest.raises(ValueError, match="must be a positive int"):
        totals.rescale(0)
    assert totals.rescale(6) is None  # before start: the count it starts with
    state = totals._node.checkpoint_target or totals._node
    assert state.partitions == 6 and state.schedule.steps() == [(0, 6)]


def test_a_journal_from_before_states_rescaled_restores_with_its_count(harness: Any) -> None:
    """Journals written before rescale() existed carry an elastic state's count in its shape
    and no schedule: it restores, at that count, and the program's own count rescales."""
    h = harness()
    pairs = h.ssc.rateStream(10, numPartitions=1, seed=3).map(lambda line: (line[:1], 1))
    totals = pairs.updateStateByKey(lambda new, old: (old or 0) + sum(new), 6)
    state = totals._node.checkpoint_target or totals._node
    old_shape = {"kind": "StateDStream", "partitions": 4, "slide_ms": 1000}
    state.restore_state({"shape": old_shape, "key": "7", "checkpoint_ms": 2000})
    assert state.schedule.steps() == [(0, 4)] and state._wanted_partitions == 6
    with pytest.raises(ValueError, match="slide_ms: 2000 then, 1000 now"):
        state.restore_state({"shape": {**old_shape, "slide_ms": 2000}, "key": "7"})
