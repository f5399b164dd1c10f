"""track(): the paper's session example as written there, and random event streams against a
plain-Python dict simulation, including timeouts and the snapshot compactions in between."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dstream.scheduler.engine import engine_of
from dstream.storage.snapshots import decode_manifest
from dstream.testing.streams import BatchCollector, normalize
from tests.oracles import track_oracle

from .conftest import Harness

B = 1000


def test_the_papers_session_count_runs_as_written(harness: Any) -> None:
    h: Harness = harness()
    sc = h.ssc.sparkContext
    Exit = "exit"  # the paper's name
    batches = [
        [("c1", "join"), ("c2", "join")],
        [("c3", "join"), ("c1", "play")],
        [("c2", Exit)],
        [],
        [("c1", "play")],
    ]
    events = h.ssc.queueStream([sc.parallelize(b, 2) for b in batches])

    # --- Sec. 3.3 of the paper, in Python ---
    sessions = events.track(
        lambda key, ev: 1,  # initialize function
        lambda key, st, ev: None if ev == Exit else 1,  # update function
        "3s",
    )  # timeout
    counts = sessions.count()  # a stream of ints
    # ----------------------------------------
    got_counts = BatchCollector(counts)
    got_sessions = BatchCollector(sessions)
    h.ssc.start()
    h.run_batches(len(batches))
    # c3 (last event at 2 s) times out at 5 s; c1 stays alive by playing at 5 s.
    assert got_counts.in_order() == [[2], [3], [2], [2], [1]]
    assert normalize(got_sessions.in_order()[-1]) == [("c1", 1)]


EVENTS = st.lists(
    st.lists(
        st.tuples(st.sampled_from("abcdefg"), st.sampled_from(["join", "play", "exit"])), max_size=6
    ),
    min_size=4,
    max_size=12,
)


@settings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(batches=EVENTS, timeout_k=st.integers(1, 3), snapshot_k=st.integers(1, 3))
def test_track_equals_a_dict_simulation(
    harness: Any, batches: list[list[tuple[str, str]]], timeout_k: int, snapshot_k: int
) -> None:
    h: Harness = harness()
    sc = h.ssc.sparkContext
    events = h.ssc.queueStream([sc.parallelize(b, 2) for b in batches])
    sessions = events.track(
        lambda k, ev: 1,
        lambda k, s, ev: None if ev == "exit" else s + 1,
        timeout_k,
        numPartitions=3,
    ).checkpoint(snapshot_k)  # compact into a new snapshot every snapshot_k intervals
    got = BatchCollector(sessions)
    got_count = BatchCollector(sessions.count())
    got_changes = BatchCollector(sessions.changes())
    h.ssc.start()
    # One interval at a time, so that compactions land between intervals.
    for _ in batches:
        h.run_batches(1)
    expected = track_oracle(batches, timeout_k * B, slide_ms=B)
    assert [dict(b) for b in got.in_order()] == expected
    assert got_count.in_order() == [[len(e)] for e in expected]
    # changes(): the keys that received events or timed out in the interval, with their
    # new state (None once removed).
    before: dict[str, int] = {}
    for i, (changed, now) in enumerate(zip(got_changes.in_order(), expected, strict=True)):
        touched = {k for k, _ in batches[i]} | {k for k in before if k not in now}
        assert dict(changed) == {
            k: now.get(k) for k in touched if k in now or k in before or k in dict(changed)
        }
        before = now


def test_snapshots_are_written_and_old_ones_deleted(harness: Any, tmp_path: Any) -> None:
    h: Harness = harness()
    h.ssc.checkpoint(str(tmp_path))
    sc = h.ssc.sparkContext
    batches = [[(f"k{i}", "join")] for i in range(8)]
    events = h.ssc.queueStream([sc.parallelize(b, 2) for b in batches])
    sessions = events.track(lambda k, e: 1, lambda k, s, e: s, 100, numPartitions=2).checkpoint(2)
    got = BatchCollector(sessions.count())
    h.ssc.start()
    for _ in batches:
        h.run_batches(1)
    state_dir = sessions._node._directory
    assert state_dir is not None and state_dir.startswith(str(tmp_path))
    engine_of(h.ssc).checkpointer.wait_idle(60)
    snapshots = sorted(n for n in os.listdir(state_dir) if n.isdigit())
    # Compactions ran every 2 intervals; only the snapshots still in use (or referenced by
    # the metadata records on disk) remain.
    assert 1 <= len(snapshots) <= 4
    for name in snapshots:
        # Each partition's snapshot is named by the SHA-256 its manifest records.
        directory = os.path.join(state_dir, name)
        with open(os.path.join(directory, "_COMPLETE"), "rb") as f:
            digests = decode_manifest(f.read(), "_COMPLETE", 2)
        assert sorted(os.listdir(directory)) == [
            "_COMPLETE",
            *(f"part-{i:05d}-{digest}.sqlite" for i, digest in enumerate(digests)),
        ]
    assert got.in_order() == [[i] for i in range(1, 9)]


def test_track_arguments_are_validated(harness: Any) -> None:
    s = harness().ssc.queueStream([[("a", 1)]])
    with pytest.raises(
        ValueError,
        match=r"track\(\) timeout 1500 ms must be a multiple of the stream's slide 1000 ms",
    ):
        s.track(lambda k, e: 1, lambda k, st, e: 1, 1.5)
    with pytest.raises(TypeError, match=r"track\(\) needs a function for update"):
        s.track(lambda k, e: 1, None, 3)
