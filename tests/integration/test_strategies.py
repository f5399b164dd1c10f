"""Recovery strategies chosen per stream (``recoveryStrategy``): every strategy computes the
same windows, replay writes no checkpoint at all and keeps lineage bounded by rebuilding
from the window's inputs, replicate keeps two copies, auto decides from a measured
checkpoint, and what cannot be replayed is refused. Executor kills are in
tests/cluster/test_executor_loss.py, driver restarts in tests/integration/test_recovery.py."""

from __future__ import annotations

import operator
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from dstream.recovery import auto_policy as auto
from dstream.recovery.auto_policy import AutoPolicy
from dstream.scheduler.engine import engine_of
from dstream.streams.state_base import StateStream

from .conftest import Harness

WINDOW, INTERVALS = 4, 13
STRATEGIES = ("checkpoint", "replay", "replicate", "auto")


def lineage_depth(rdd: Any) -> int:
    return len(rdd.toDebugString().decode().splitlines())


def checkpoints_of(root: Path, stream: StateStream) -> list[str]:
    directory = root / f"state-{stream._key}"
    return sorted(os.listdir(directory)) if directory.exists() else []


def windows_program(h: Harness, root: Path, **every: Any) -> dict[str, Any]:
    h.ssc.checkpoint(str(root))
    pairs = h.ssc.rateStream(40, numPartitions=2, seed=3).map(lambda line: (line[:2], 1))
    seen: dict[str, Any] = {"input": {}}
    pairs.foreachRDD(lambda t, rdd: seen["input"].__setitem__(t.ms, Counter(rdd.keys().collect())))
    for kind in STRATEGIES:
        counts = pairs.reduceByKeyAndWindow(operator.add, operator.sub, WINDOW, 1, 2)
        counts.checkpoint(2).recoveryStrategy(kind, every=every.get(kind))
        seen[kind] = {
            "out": {},
            "rdd": None,
            "stream": counts._node.checkpoint_target or counts._node,
        }

        def keep(t: Any, rdd: Any, kind: str = kind) -> None:
            seen[kind]["rdd"] = rdd
            seen[kind]["out"][t.ms] = sorted(rdd.collect())

        counts.foreachRDD(keep)
    return seen


def oracle(inputs: dict[int, Counter[str]]) -> dict[int, list[tuple[str, int]]]:
    times = sorted(inputs)
    out = {}
    for i, t in enumerate(times):
        window = sum((inputs[u] for u in times[max(0, i - WINDOW + 1) : i + 1]), Counter())
        out[t] = sorted((k, n) for k, n in window.items() if n)
    return out


def test_every_strategy_computes_the_same_windows_and_replay_writes_no_checkpoint(
    harness: Any, tmp_path: Path
) -> None:
    h: Harness = harness()
    seen = windows_program(h, tmp_path, replicate=2)
    h.ssc.start()
    depths: dict[str, list[int]] = {kind: [] for kind in STRATEGIES}
    for _ in range(INTERVALS):
        h.run_batches(1)
        for kind in STRATEGIES:
            depths[kind].append(lineage_depth(seen[kind]["rdd"]))
    engine_of(h.ssc).checkpointer.wait_idle(60)
    expected = oracle(seen["input"])
    assert any(expected.values())
    for kind in STRATEGIES:
        assert seen[kind]["out"] == expected, kind
    streams = {kind: seen[kind]["stream"] for kind in STRATEGIES}
    # replay: no checkpoint file, ever; the others checkpoint every 2 s.
    assert checkpoints_of(tmp_path, streams["replay"]) == []
    assert len(checkpoints_of(tmp_path, streams["checkpoint"])) >= 1
    assert len(checkpoints_of(tmp_path, streams["replicate"])) >= 1
    # replay's lineage is cut at every window (intervals 4, 8, 12): never deeper than the
    # deepest it reached in the first two windows, as a checkpointed state's.
    assert max(depths["replay"][8:]) <= max(depths["replay"][:8])
    assert depths["replay"][11] < depths["replay"][10]
    # replicate: each interval's state asks for two copies.
    state_rdd = streams["replicate"]._generated[max(streams["replicate"]._generated)]
    assert state_rdd.getStorageLevel().replication == 2
    checkpointed = streams["checkpoint"]._generated[max(streams["checkpoint"]._generated)]
    assert checkpointed.getStorageLevel().replication == 1
    # What is in force is in the progress record, one entry per state.
    record = h.ssc.lastProgress
    assert record is not None
    assert sorted(s["strategy"] for s in record["stateOperators"]) == sorted(
        ["checkpoint", "replay", "replicate", "checkpoint"]  # auto measured 1 % or so
    ) or sorted(s["strategy"] for s in record["stateOperators"]) == sorted(
        ["checkpoint", "replay", "replicate", "replay"]  # auto measured more than 5 %
    )


@pytest.mark.parametrize(("overhead", "picked"), [(0.0, "replay"), (1.0, "checkpoint")])
def test_auto_decides_from_the_first_checkpoint_it_measures(
    harness: Any, tmp_path: Path, monkeypatch: Any, overhead: float, picked: str
) -> None:
    # Any write costs more than 0 % of the checkpoint interval, none more than 100 %.
    monkeypatch.setattr(auto, "AUTO_OVERHEAD", overhead)
    h: Harness = harness()
    h.ssc.checkpoint(str(tmp_path))
    pairs = h.ssc.rateStream(40, numPartitions=2, seed=3).map(lambda line: (line[:2], 1))
    counts = pairs.reduceByKeyAndWindow(operator.add, operator.sub, WINDOW, 1, 2)
    counts.checkpoint(2).recoveryStrategy("auto")
    inputs: dict[int, Counter[str]] = {}
    out: dict[int, Any] = {}
    pairs.foreachRDD(lambda t, rdd: inputs.__setitem__(t.ms, Counter(rdd.keys().collect())))
    counts.foreachRDD(lambda t, rdd: out.__setitem__(t.ms, sorted(rdd.collect())))
    state = counts._node.checkpoint_target
    assert isinstance(state, StateStream)
    h.ssc.start()
    h.run_batches(3)
    engine_of(h.ssc).checkpointer.wait_idle(60)  # the checkpoint of interval 2, measured
    policy = state.recovery
    assert isinstance(policy, AutoPolicy) and policy.in_force.kind == picked
    assert policy.choice is not None and "took" in policy.choice[1]
    h.run_batches(INTERVALS - 3)
    engine_of(h.ssc).checkpointer.wait_idle(60)
    assert out == oracle(inputs)
    written = checkpoints_of(tmp_path, state)
    if picked == "replay":
        # The one checkpoint measured, deleted once no metadata record refers to it.
        assert written == []
    else:
        assert written and max(int(ms) for ms in written) >= 10_000
    journaled = state.journal_state()
    assert journaled is not None and journaled["strategy"] == picked


def test_replay_is_refused_where_no_window_rebuilds_the_state(harness: Any) -> None:
    h: Harness = harness()
    pairs = h.ssc.rateStream(10, numPartitions=1, seed=3).map(lambda line: (line[:1], 1))
    totals = pairs.updateStateByKey(lambda new, old: (old or 0) + sum(new))
    with pytest.raises(ValueError, match='"replay" cannot rebuild the state of updateStateByKey'):
        totals.recoveryStrategy("replay")
    sessions = pairs.track(lambda k, e: 1, lambda k, s, e: s + 1, 3)
    with pytest.raises(ValueError, match=r"track\(\) keeps each key's state"):
        sessions.recoveryStrategy("replay")
    with pytest.raises(ValueError, match="keeps no state between intervals"):
        pairs.recoveryStrategy("replicate")
    # What they may use instead.
    totals.recoveryStrategy("replicate", copies=2)
    sessions.recoveryStrategy("checkpoint", every=2)


def test_max_history_must_cover_the_replayed_window(sc: Any, tmp_path: Path) -> None:
    from dstream import Duration, ManualClock, StreamingContext
    from dstream.settings import StreamingSettings

    settings = StreamingSettings(max_history=Duration(3_000))
    ssc = StreamingContext(sc, Duration(1000), clock=ManualClock(0), settings=settings)
    try:
        ssc.checkpoint(str(tmp_path))
        pairs = ssc.rateStream(10, numPartitions=1, seed=3).map(lambda line: (line[:1], 1))
        counts = pairs.reduceByKeyAndWindow(operator.add, operator.sub, 8, 1, 1)
        counts.recoveryStrategy("replay")
        counts.foreachRDD(lambda rdd: rdd.count())
        with pytest.raises(ValueError, match="max_history 3000 ms must be longer than the "):
            ssc.start()
    finally:
        ssc.stop(stopSparkContext=False)
