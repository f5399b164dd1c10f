"""Per-stream recovery policies (dstream.recovery) (StreamScope's Sec. 4.4 on D-Streams): what a choice
means for one state stream, which choices are refused and why, and what "auto" picks from
a measured checkpoint. Pure logic, no Spark."""

from __future__ import annotations

import pytest

from dstream.recovery.auto_policy import AUTO_OVERHEAD, AutoPolicy, auto_choice
from dstream.recovery.checkpoint_policy import CheckpointPolicy
from dstream.recovery.choice import policy_for
from dstream.recovery.policy import RecoveryPolicy
from dstream.time import Duration, Time

SLIDE = Duration(1_000)
WINDOW = Duration(30_000)


def window_state(kind: str, **kw: object) -> RecoveryPolicy:
    return policy_for(kind, slide=SLIDE, window=WINDOW, unbounded=None, label="w", **kw)


def test_checkpoint_is_the_default_and_keeps_its_interval() -> None:
    s: RecoveryPolicy = CheckpointPolicy()
    assert s.kind == "checkpoint"
    assert s.checkpoint_every(Duration(10_000)) == Duration(10_000)
    assert s.copies(1) == 1 and s.copies(2) == 2  # the context's state_replicas
    s = window_state("checkpoint", every=5)
    assert s.checkpoint_every(Duration(10_000)) == Duration(5_000)


def test_replay_writes_no_checkpoint_and_rebuilds_from_the_window_every_window() -> None:
    s = window_state("replay")
    assert s.checkpoint_every(Duration(10_000)) is None
    # The lineage is cut by a rebuild from the window's inputs at every multiple of `every`
    # (the window by default): depth stays under two windows.
    assert s.rebuild_every == WINDOW
    assert [t for t in range(1, 91) if s.is_cut(Duration(t * 1000))] == [30, 60, 90]
    assert window_state("replay", every=10).rebuild_every == Duration(10_000)


def test_replicate_keeps_copies_and_checkpoints_rarely() -> None:
    s = window_state("replicate", copies=2)
    assert s.copies(1) == 2
    # A checkpoint still bounds lineage and serves a driver restart (in-memory copies die
    # with the application), ten times less often than by default.
    assert s.checkpoint_every(Duration(10_000)) == Duration(100_000)
    assert window_state("replicate", copies=3, every=20).checkpoint_every(
        Duration(10_000)
    ) == Duration(20_000)


@pytest.mark.parametrize(
    ("kind", "kw", "message"),
    [
        ("snapshot", {}, "'snapshot' is not a recovery strategy"),
        ("replay", {"copies": 2}, 'copies= is for "replicate"'),
        ("replicate", {"copies": 1}, "copies=1"),
        ("checkpoint", {"every": 1.5}, "multiple of its slide"),
        ("replay", {"every": 45}, "at most the window"),
    ],
)
def test_bad_choices_name_the_value_the_rule_and_the_fix(
    kind: str, kw: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        window_state(kind, **kw)


def test_replay_is_refused_for_state_of_unbounded_memory() -> None:
    with pytest.raises(ValueError) as e:
        policy_for(
            "replay",
            slide=SLIDE,
            window=None,
            unbounded="updateStateByKey keeps every key since the start",
            label="updateStateByKey#3",
        )
    text = str(e.value)
    assert "updateStateByKey#3" in text and "since the start" in text
    assert '"checkpoint"' in text and '"replicate"' in text  # the fix


def test_auto_replays_a_window_whose_checkpoint_costs_more_than_its_share() -> None:
    every = Duration(10_000)
    kind, why = auto_choice(True, None, write_s=2.0, checkpoint_bytes=5_000_000, every=every)
    assert kind == "replay"
    assert "20%" in why and "5.0 MB" in why
    kind, why = auto_choice(True, None, write_s=0.1, checkpoint_bytes=1_000_000, every=every)
    assert kind == "checkpoint" and "1%" in why
    # The threshold itself.
    at = AUTO_OVERHEAD * every.ms / 1000
    assert (
        auto_choice(True, None, write_s=at * 1.01, checkpoint_bytes=0, every=every)[0] == "replay"
    )
    assert auto_choice(True, None, write_s=at * 0.99, checkpoint_bytes=0, every=every)[0] == (
        "checkpoint"
    )


def test_auto_keeps_checkpoints_for_state_that_cannot_replay() -> None:
    kind, why = auto_choice(
        False, "track() keeps every key", write_s=9.0, checkpoint_bytes=1, every=Duration(10_000)
    )
    assert kind == "checkpoint" and "track() keeps every key" in why


class _State:
    """What a policy reads of its state node (dstream.recovery.policy.RecoveringState)."""

    label = "reduceByKeyAndWindow#4"
    zero_time: Time | None = Time(0)
    published_ms: int | None = None
    completed_ms: int | None = None
    restored_floor_ms: int | None = None
    replay_window: Duration | None = WINDOW
    cannot_replay: str | None = None


def test_replay_floor_is_the_window_before_the_newest_completed_interval() -> None:
    state, replay = _State(), window_state("replay")
    assert replay.floor(state) == Time(0)  # nothing completed: the start
    state.completed_ms = 50_000
    assert replay.floor(state) == Time(20_000)
    state.completed_ms = 10_000
    assert replay.floor(state) == Time(0)  # never before the start
    restarted = _State()
    restarted.restored_floor_ms = 7_000
    assert replay.floor(restarted) == Time(7_000)
    state.published_ms = 40_000  # a checkpoint (auto's, before it picked replay) rules
    assert replay.floor(state) == Time(40_000)
    assert CheckpointPolicy().floor(state) == Time(40_000)
    assert replay.history_needed(None, WINDOW) == (WINDOW, "replayed window")
    assert replay.replay_span(None, SLIDE) == WINDOW + SLIDE


def test_auto_delegates_to_the_mode_it_picked_and_journals_the_pick() -> None:
    auto = window_state("auto", every=10)
    assert isinstance(auto, AutoPolicy)
    assert auto.checkpoint_every(Duration(20_000)) == Duration(10_000)  # checkpoint first
    assert auto.journal() == {"strategy": "checkpoint", "auto": None}
    auto.measured(_State(), 2.0, 5_000_000, Duration(10_000))  # 20 % > 5 %: replay
    assert auto.in_force.kind == "replay" and auto.checkpoint_every(Duration(1)) is None
    assert auto.is_cut(WINDOW) and not auto.is_cut(WINDOW - SLIDE)
    saved = auto.journal()
    assert saved["strategy"] == "replay" and saved["auto"][0] == "replay"
    assert auto.progress()["strategyReason"] == saved["auto"][1]
    auto.measured(_State(), 0.0, 1, Duration(10_000))  # once: a later write changes nothing
    assert auto.in_force.kind == "replay"


def test_a_journal_written_before_the_policies_still_restores() -> None:
    """Journals before dstream.recovery: the mode in force as a string, auto's pick as a
    [mode, reason] list, approximateRecovery's restores as flat [partition, copy] lists."""
    old = {
        "checkpoint_ms": 30_000,
        "key": "4",
        "shape": {"kind": "ReducedWindowedDStream", "slide_ms": 1000},
        "strategy": "replay",
        "auto": ["replay", "a checkpoint of 5.0 MB took 2.00 s, 20% of the 10 s"],
        "floor_ms": 20_000,
        "partitions": [[0, 4]],
        "declared_partitions": 4,
    }
    auto = window_state("auto")
    auto.restore(old)
    assert auto.in_force.kind == "replay" and auto.journal()["auto"] == old["auto"]
    checkpoint = window_state("checkpoint")
    checkpoint.restore(old)  # another mode now: the old pick is not this policy's
    assert checkpoint.journal() == {"strategy": "checkpoint", "auto": None}


def test_the_auto_pick_is_not_saved_with_the_program() -> None:
    import pickle

    auto = window_state("auto")
    auto.measured(_State(), 2.0, 1, Duration(10_000))
    again = pickle.loads(pickle.dumps(auto))
    assert again.choice is None and again.in_force.kind == "checkpoint"  # the journal's


def test_a_program_saved_before_the_policies_loads_with_its_choice(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A program saved before dstream.recovery pickled its strategy as
    dstream.streams.strategy.RecoveryStrategy: it loads, and becomes the same policy."""
    import dataclasses
    import pickle
    import sys
    import types

    from dstream.recovery.choice import policy_from_saved
    from dstream.recovery.replay_policy import ReplayPolicy
    from dstream.recovery.replicate_policy import ReplicatePolicy
    from dstream.streams.graph_pickle import loads_graph

    @dataclasses.dataclass(frozen=True)
    class RecoveryStrategy:  # as it was
        kind: str = "checkpoint"
        every: Duration | None = None
        replicas: int | None = None
        window: Duration | None = None

    RecoveryStrategy.__module__ = "dstream.streams.strategy"
    RecoveryStrategy.__qualname__ = "RecoveryStrategy"
    then = types.ModuleType("dstream.streams.strategy")
    then.RecoveryStrategy = RecoveryStrategy  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "dstream.streams.strategy", then)
    saved = [
        RecoveryStrategy("replay", None, None, WINDOW),
        RecoveryStrategy("replicate", Duration(20_000), 3, None),
        RecoveryStrategy("auto", None, None, None),
        RecoveryStrategy(),
    ]
    data = pickle.dumps(saved, protocol=5)
    monkeypatch.delitem(sys.modules, "dstream.streams.strategy")

    class _Graph:
        context = sc = None

    replay, replicate, auto, checkpoint = (
        policy_from_saved(s, WINDOW, None)
        for s in loads_graph(data, _Graph())  # type: ignore[arg-type]
    )
    assert isinstance(replay, ReplayPolicy) and replay.rebuild_every == WINDOW
    assert isinstance(replicate, ReplicatePolicy) and replicate.copies(1) == 3
    assert replicate.checkpoint_every(Duration(1_000)) == Duration(20_000)
    assert isinstance(auto, AutoPolicy) and auto.window == WINDOW
    assert isinstance(checkpoint, CheckpointPolicy)
