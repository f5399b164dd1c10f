"""track()'s per-partition state (snapshot + delta) against a plain dict simulation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dstream.storage.snapshots import StateTable
from dstream.storage.taskfs import LocalTaskFiles
from dstream.tasks.track_state import (
    SnapshotRef,
    TrackDelta,
    TrackFunctions,
    changes,
    compact,
    count,
    fold,
    view,
)
from tests.oracles import session_init, session_update, track_oracle

SLIDE = 1000


def tagged(events: list[tuple[Any, str]]) -> list[tuple[Any, tuple[tuple[int, int], str]]]:
    return [(k, ((0, j), ev)) for j, (k, ev) in enumerate(events)]


def run_fold(
    batches: list[list[tuple[Any, str]]], timeout_ms: int, compact_every: int, directory: Path
) -> list[TrackDelta]:
    """Drive fold() as the engine does: incremental, and after each compaction rebuild from
    the new snapshot and the intervals since."""
    fns = TrackFunctions(session_init, session_update, timeout_ms, SLIDE)
    base_ms: int | None = None
    base: SnapshotRef | None = None
    previous: TrackDelta | None = None
    deltas = []
    for i, events in enumerate(batches):
        t = (i + 1) * SLIDE
        if previous is not None and previous.base_ms != base_ms:
            # Rebuild: the snapshot at base_ms plus every interval after it.
            first = (base_ms or 0) // SLIDE
            intervals = [((j + 1) * SLIDE, tagged(batches[j])) for j in range(first, i + 1)]
            delta = fold(0, None, base_ms, base, intervals, fns)
        else:
            delta = fold(0, previous, base_ms, base, [(t, tagged(events))], fns)
        deltas.append(delta)
        previous = delta
        if compact_every and (i + 1) % compact_every == 0:
            _, base = compact(delta, f"{directory}/{t}")
            base_ms = t
    return deltas


KEYS = st.sampled_from(["a", "b", "c", "d", "e", ("t", 1), 7])
EVENTS = st.lists(st.tuples(KEYS, st.sampled_from(["join", "play", "play", "exit"])), max_size=6)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    batches=st.lists(EVENTS, min_size=1, max_size=14),
    timeout_k=st.integers(1, 4),
    compact_every=st.integers(0, 4),
)
def test_fold_equals_a_dict_simulation(
    tmp_path_factory: Any, batches: list[list[tuple[Any, str]]], timeout_k: int, compact_every: int
) -> None:
    directory = tmp_path_factory.mktemp("snapshots")
    timeout_ms = timeout_k * SLIDE
    expected = track_oracle(batches, timeout_ms, slide_ms=SLIDE)
    deltas = run_fold(batches, timeout_ms, compact_every, directory)
    previous: dict[Any, int] = {}
    for i, (delta, want) in enumerate(zip(deltas, expected, strict=True)):
        assert dict(view(delta)) == want, f"interval {i + 1}"
        assert count(delta) == len(want)
        touched = {k for k, _ in batches[i]} | {k for k in previous if k not in want}
        expected_changes = {k: want.get(k) for k in touched if k in want or k in previous}
        assert dict(changes(delta)) == expected_changes, f"interval {i + 1}"
        previous = want


def test_events_of_a_key_are_applied_in_input_order(tmp_path: Path) -> None:
    fns = TrackFunctions(lambda k, e: [e], lambda k, s, e: [*s, e], 10_000, SLIDE)
    shuffled = [("k", ((1, 0), "c")), ("k", ((0, 1), "b")), ("k", ((0, 0), "a"))]
    delta = fold(0, None, None, None, [(1000, shuffled)], fns)
    assert dict(view(delta)) == {"k": ["a", "b", "c"]}


def test_an_interval_reads_only_active_and_expiring_keys(tmp_path: Path) -> None:
    """With 5,000 idle keys in the snapshot, an interval touches the snapshot only for its
    one active key and the keys whose timeout passes now."""
    fns = TrackFunctions(session_init, session_update, 3000, SLIDE)
    idle = [(f"idle{i}", ((0, i), "join")) for i in range(5000)]
    first = fold(0, None, None, None, [(1000, idle)], fns)
    _, snap = compact(first, str(tmp_path / "1000"))
    with StateTable(snap.open(LocalTaskFiles())) as table:
        assert table.count() == 5000
    delta = fold(0, None, 1000, snap, [(2000, [("new", ((0, 0), "join"))])], fns)
    assert len(delta.entries) == 1
    assert count(delta) == 5001
    delta = fold(0, delta, 1000, snap, [(3000, [])], fns)
    assert len(delta.entries) == 1
    # At 4000 the idle keys (last event 1000) reach the 3 s timeout: all expire at once.
    delta = fold(0, delta, 1000, snap, [(4000, [])], fns)
    assert count(delta) == 1
    assert dict(view(delta)) == {"new": 1}
    assert sum(1 for k, v in changes(delta) if v is None) == 5000
