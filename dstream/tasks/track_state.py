"""``track()``'s state, per partition: a snapshot file plus the changes since it.

The paper's ``track`` turns ``(key, event)`` records into ``(key, state)``. Holding each
state partition as one dict that every interval reads, copies and writes back would cost
every interval what *all* keys cost. Here a partition's state at interval t is::

    snapshot(c)  +  delta(t)          (c = the last compaction, at most a few intervals ago)

* the snapshot is an immutable SQLite file (:mod:`dstream.storage.snapshots`), written by
  an asynchronous compaction every checkpoint interval — it is the state's checkpoint; it is
  named and opened by the SHA-256 of its content (:class:`SnapshotRef`), so a snapshot that
  someone else changed is refused before any state in it is unpickled;
* the delta is the one record of the partition's RDD: the keys changed since c, with their
  new (pickled) state or a removal mark, and their last event time.

An interval's task reads the delta, looks up in the snapshot only the keys that received
events, asks the snapshot's time index for the keys whose timeout expires now, and writes a
new delta: its cost follows the active and expiring keys, not the idle ones. After a
compaction the next delta is rebuilt from the new snapshot and the few intervals since
(``fold``), never from the previous delta, so lineage stops at the snapshot: recovery after a
lost worker replays those intervals, in parallel across partitions.

Events of one key within an interval are applied in a fixed order (by their position in the
input), so a recomputed interval gives exactly the same state.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dstream.storage.integrity import VerifiedFile, open_verified
from dstream.storage.snapshots import StateTable, write_table
from dstream.storage.taskfs import LocalTaskFiles, TaskFiles

if TYPE_CHECKING:
    from dstream.tasks.quarantine import StateNotes

__all__ = [
    "SnapshotRef",
    "TrackDelta",
    "TrackFunctions",
    "changes",
    "compact",
    "count",
    "fold",
    "view",
]

# One changed key: (pickled state, or None once removed; batch time of its last event;
# batch time it last changed; whether the snapshot holds the key).
Entry = tuple[bytes | None, int, int, bool]


def key_bytes(key: Any) -> bytes:
    """The canonical form of a key in snapshots (equal keys of one type pickle equally)."""
    return pickle.dumps(key, protocol=5)


def snapshot_path(directory: str, partition: int, sha256: str) -> str:
    """Partition ``partition``'s snapshot inside one snapshot's directory: its name carries
    the SHA-256 of its content."""
    return f"{directory}/part-{partition:05d}-{sha256}.sqlite"


@dataclass(frozen=True)
class SnapshotRef:
    """A published snapshot: its path and the hex SHA-256 of its content, recorded by its
    writer (in the checkpoint's manifest); it is opened only if its content matches."""

    path: str
    sha256: str

    def open(self, files: TaskFiles) -> VerifiedFile:
        """The snapshot as a verified local file (downloaded first if ``files`` is remote)."""
        return open_verified(files.local_copy(self.path, self.sha256), self.sha256, self.path)


@dataclass
class TrackDelta:
    """The one record of a track() state partition: changes since the snapshot ``base_ms``."""

    partition: int
    base_ms: int | None
    base: SnapshotRef | None
    entries: dict[bytes, Entry] = field(default_factory=dict)
    applied_ms: int | None = None  # the last interval folded in
    files: TaskFiles = field(default_factory=LocalTaskFiles)  # where the snapshots live

    def table(self) -> StateTable:
        """The snapshot this delta is based on (an empty one before the first compaction)."""
        return StateTable(None if self.base is None else self.base.open(self.files))


@dataclass(frozen=True)
class TrackFunctions:
    initialize: Callable[[Any, Any], Any]
    update: Callable[[Any, Any, Any], Any]
    timeout_ms: int
    slide_ms: int


def _apply_interval(
    delta: TrackDelta,
    table: StateTable,
    time_ms: int,
    events: Iterable[tuple[Any, tuple[tuple[int, int], Any]]],
    fns: TrackFunctions,
    notes: StateNotes | None = None,
) -> None:
    entries = delta.entries
    # Group this interval's events by key, in input order (the tag is (source partition, seq)).
    by_key: dict[bytes, tuple[Any, list[tuple[tuple[int, int], Any]]]] = {}
    for key, tagged in events:
        kb = key_bytes(key)
        slot = by_key.get(kb)
        if slot is None:
            by_key[kb] = (key, [tagged])
        else:
            slot[1].append(tagged)
    from_table = table.lookup([kb for kb in by_key if kb not in entries])
    for kb in sorted(by_key):
        key, tagged_events = by_key[kb]
        tagged_events.sort(key=lambda te: te[0])
        if kb in entries:
            pickled, _, _, in_table = entries[kb]
        else:
            row = from_table.get(kb)
            pickled, in_table = (row[0], True) if row is not None else (None, False)
        state = pickle.loads(pickled) if pickled is not None else None
        was_live = state is not None
        for _, event in tagged_events:
            if notes is None:
                state = (
                    fns.initialize(key, event) if state is None else fns.update(key, state, event)
                )
                continue
            try:  # quarantine: an event its function raises on leaves the state as it was
                state = (
                    fns.initialize(key, event) if state is None else fns.update(key, state, event)
                )
            except Exception as exc:
                notes.note(time_ms, key, event, exc)
        if state is not None:
            entries[kb] = (pickle.dumps(state, protocol=5), time_ms, time_ms, in_table)
        elif was_live:
            entries[kb] = (None, time_ms, time_ms, in_table)
        # else: the key neither lived before nor lives now; nothing visible changed.
    # Timeouts: a key whose last event is at or before `expiry` is dropped now.
    expiry = time_ms - fns.timeout_ms
    for kb, (pickled, last, _, in_table) in list(entries.items()):
        if pickled is not None and last <= expiry:
            entries[kb] = (None, last, time_ms, in_table)
    # Keys only in the snapshot whose timeout passes during this interval (the time index
    # finds exactly those; earlier ones were dropped by earlier intervals).
    for kb in table.last_between(expiry - fns.slide_ms, expiry):
        if kb not in entries:
            entries[kb] = (None, expiry, time_ms, True)
    delta.applied_ms = time_ms


def fold(
    partition: int,
    previous: TrackDelta | None,
    base_ms: int | None,
    base: SnapshotRef | None,
    intervals: Sequence[tuple[int, Iterable[tuple[Any, tuple[tuple[int, int], Any]]]]],
    fns: TrackFunctions,
    files: TaskFiles | None = None,
    notes: StateNotes | None = None,
) -> TrackDelta:
    """Apply ``intervals`` (batch time, tagged events), in order, on top of ``previous`` — or
    on top of the snapshot ``base`` alone when ``previous`` is None or older than it. With
    ``notes`` (bad_records="quarantine"), an event whose function raises is set aside."""
    files = files if files is not None else LocalTaskFiles()
    if previous is not None and previous.base_ms == base_ms:
        delta = TrackDelta(
            partition, base_ms, base, dict(previous.entries), previous.applied_ms, files
        )
    else:
        delta = TrackDelta(partition, base_ms, base, files=files)
    with delta.table() as table:
        for time_ms, events in intervals:
            _apply_interval(delta, table, time_ms, events, fns, notes)
    if notes is not None:
        notes.send()
    return delta


def view(delta: TrackDelta) -> Iterator[tuple[Any, Any]]:
    """Every live ``(key, state)`` of the partition: the delta's, then the snapshot's rest.
    (This reads the whole partition: it is what a query over all state costs.)"""
    for kb, (pickled, *_) in delta.entries.items():
        if pickled is not None:
            yield pickle.loads(kb), pickle.loads(pickled)
    with delta.table() as table:
        for kb, pickled, _ in table.scan():
            if kb not in delta.entries:
                yield pickle.loads(kb), pickle.loads(pickled)


def count(delta: TrackDelta) -> int:
    """Live keys of the partition, from the snapshot's recorded size and the delta alone."""
    with delta.table() as table:
        n = table.count()
    for pickled, _, _, in_table in delta.entries.values():
        if pickled is not None and not in_table:
            n += 1
        elif pickled is None and in_table:
            n -= 1
    return n


def changes(delta: TrackDelta) -> Iterator[tuple[Any, Any]]:
    """``(key, new state)`` for keys changed in the delta's last interval; ``None`` marks a
    key removed (by ``update`` returning None, or by its timeout)."""
    for kb, (pickled, _, modified, _) in delta.entries.items():
        if modified == delta.applied_ms:
            yield pickle.loads(kb), None if pickled is None else pickle.loads(pickled)


def compact(delta: TrackDelta, directory: str) -> tuple[int, SnapshotRef]:
    """Write the partition's new snapshot (base + delta) into ``directory``, the snapshot's
    own directory; returns (partition, the new snapshot)."""
    rows = {kb: (None if p is None else (p, last)) for kb, (p, last, _, _) in delta.entries.items()}
    base = None if delta.base is None else delta.base.open(delta.files)
    try:
        path, sha256 = write_table(
            delta.files,
            lambda digest: snapshot_path(directory, delta.partition, digest),
            None if base is None else base.path,
            rows,
        )
    finally:
        if base is not None:
            base.close()
    return delta.partition, SnapshotRef(path, sha256)
