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
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from dstream.storage.integrity import VerifiedFile, open_verified
from dstream.storage.snapshots import StateTable, write_table
from dstream.storage.taskfs import LocalTaskFiles, TaskFiles
from dstream.tasks.approx_state import (
    MISSING,
    ApproxMeta,
    ApproxTask,
    Copier,
    LostBlock,
    note_change,
)

if TYPE_CHECKING:
    from dstream.tasks.bad_record_notes import StateNotes

__all__ = [
    "SnapshotRef",
    "TrackDelta",
    "TrackFunctions",
    "changes",
    "compact",
    "count",
    "fold",
    "fold_approximate",
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
    # approximateRecovery(): the drift from the partition's copy (dstream.tasks.approx_state),
    # and the interval a restore from that copy made this delta at (its base is then None and
    # it holds every key; it moves onto a snapshot only once one is at least that new).
    approx: ApproxMeta | None = None
    origin_ms: int | None = None

    def table(self) -> StateTable:
        """The snapshot this delta is based on (an empty one before the first compaction)."""
        return StateTable(None if self.base is None else self.base.open(self.files))


@dataclass(frozen=True)
class TrackFunctions:
    initialize: Callable[[Any, Any], Any]
    update: Callable[[Any, Any, Any], Any]
    timeout_ms: int
    slide_ms: int


# approximateRecovery's hook: (key bytes, key, state before, state now), MISSING for none.
OnChange = Callable[[bytes, Any, Any, Any], None]


def _apply_interval(
    delta: TrackDelta,
    table: StateTable,
    time_ms: int,
    events: Iterable[tuple[Any, tuple[tuple[int, int], Any]]],
    fns: TrackFunctions,
    notes: StateNotes | None = None,
    on_change: OnChange | None = None,
) -> None:
    """Fold one interval into ``delta``; ``on_change`` hears each key whose state it changes
    (an update, a removal, a timeout)."""
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
        # A state of its own for the divergence: the update may change `state` in place.
        before = MISSING if on_change is None or pickled is None else pickle.loads(pickled)
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
        if on_change is not None and (was_live or state is not None):
            on_change(kb, key, before, MISSING if state is None else state)
    # Timeouts: a key whose last event is at or before `expiry` is dropped now.
    expiry = time_ms - fns.timeout_ms
    for kb, (pickled, last, _, in_table) in list(entries.items()):
        if pickled is not None and last <= expiry:
            entries[kb] = (None, last, time_ms, in_table)
            if on_change is not None:
                on_change(kb, None, pickle.loads(pickled), MISSING)
    # Keys only in the snapshot whose timeout passes during this interval (the time index
    # finds exactly those; earlier ones were dropped by earlier intervals).
    expired = [kb for kb in table.last_between(expiry - fns.slide_ms, expiry) if kb not in entries]
    for kb in expired:
        entries[kb] = (None, expiry, time_ms, True)
    if on_change is not None and expired:
        for kb, (pickled, _) in table.lookup(expired).items():
            on_change(kb, None, pickle.loads(pickled), MISSING)
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


# ---- approximateRecovery ------------------------------------------------------------------
# A partition's copy (dstream.tasks.approx_state.CopyStore) holds, per key bytes, its pickled
# state and last event time: a restore gives a delta on no snapshot that holds every key.


class _Tables:
    """The snapshot table of the delta being folded, opened again only when its base changes
    (a restore, a move onto a newer snapshot)."""

    def __init__(self) -> None:
        self._table: StateTable | None = None
        self._base: SnapshotRef | None = None

    def of(self, delta: TrackDelta) -> StateTable:
        if self._table is None or delta.base != self._base:
            self.close()
            self._table, self._base = delta.table(), delta.base
        return self._table

    def close(self) -> None:
        if self._table is not None:
            self._table.close()
            self._table = None


def _rebase(
    delta: TrackDelta, base_ms: int, base: SnapshotRef | None, tables: _Tables
) -> TrackDelta:
    """``delta`` on the newer snapshot ``base_ms``, which was compacted from this partition's
    delta of ``base_ms`` (the chain ``delta`` ends): the entries changed since then, each
    marked with whether that snapshot holds its key. No interval is folded again."""
    kept = {kb: e for kb, e in delta.entries.items() if e[2] > base_ms}
    moved = TrackDelta(delta.partition, base_ms, base, {}, delta.applied_ms, delta.files)
    held = tables.of(moved).lookup(list(kept))
    moved.entries = {kb: (p, last, mod, kb in held) for kb, (p, last, mod, _) in kept.items()}
    return moved


def _touch(value: tuple[bytes, int], time_ms: int) -> tuple[bytes, int]:
    """A copied key that had events at ``time_ms``: its last event time is then."""
    return value[0], max(value[1], time_ms)


def _current(delta: TrackDelta, table: StateTable, keys: Iterable[bytes]) -> list[Any]:
    """``(key bytes, (pickled state, last event ms) | MISSING)`` of ``keys`` now."""
    out: list[Any] = []
    unseen = []
    for kb in keys:
        entry = delta.entries.get(kb)
        if entry is None:  # changed before the snapshot this delta moved onto
            unseen.append(kb)
        else:
            out.append((kb, MISSING if entry[0] is None else (entry[0], entry[1])))
    rows = table.lookup(unseen) if unseen else {}
    out += [(kb, rows.get(kb, MISSING)) for kb in unseen]
    return out


def _whole(delta: TrackDelta, table: StateTable) -> list[Any]:
    """Every live ``(key bytes, (pickled state, last event ms))`` of the partition."""
    out = [(kb, (p, last)) for kb, (p, last, _, _) in delta.entries.items() if p is not None]
    out += [(kb, (p, last)) for kb, p, last in table.scan() if kb not in delta.entries]
    return out


def fold_approximate(
    partition: int,
    previous: Sequence[tuple[Any, Any]],
    base_ms: int | None,
    base: SnapshotRef | None,
    intervals: Sequence[tuple[int, Iterable[tuple[Any, tuple[tuple[int, int], Any]]]]],
    fns: TrackFunctions,
    task: ApproxTask,
    files: TaskFiles | None = None,
    notes: StateNotes | None = None,
    said: Any = None,
) -> TrackDelta:
    """:func:`fold` under ``approximateRecovery``. ``previous``: the previous interval's
    records as its cached block has them (one ``(partition, TrackDelta)``), none (a rebuild:
    the first interval, or a restarted driver's from the snapshot ``base``), or one
    ``(LostBlock(), None)`` (the block is gone: the partition is restored from its copy and
    no interval is folded again). The previous delta moves onto ``base`` in the task, so the
    drift it carries stays true. ``said`` (an accumulator) hears the copies and restores.

    A rebuild over copies another run wrote (a restarted driver's) writes none of its own
    but ends in a base: its drift starts at the snapshot, which the copies may lag."""
    files = files if files is not None else LocalTaskFiles()
    lost = bool(previous) and type(previous[0][0]) is LostBlock
    prior: TrackDelta | None = None if lost or not previous else previous[0][1]
    slide = task.slide_ms
    writes = True
    tables = _Tables()
    try:
        if prior is not None:
            meta = prior.approx or ApproxMeta()
            meta = replace(meta, dirty=dict(meta.dirty))
            if (
                base_ms is not None
                and (prior.base_ms is None or base_ms > prior.base_ms)
                and (prior.origin_ms is None or base_ms >= prior.origin_ms)
            ):  # a newer snapshot, compacted from this chain: move onto it
                delta = _rebase(prior, base_ms, base, tables)
            else:
                delta = TrackDelta(
                    partition, prior.base_ms, prior.base, dict(prior.entries),
                    prior.applied_ms, files, origin_ms=prior.origin_ms,
                )  # fmt: skip
        else:
            delta = TrackDelta(partition, base_ms, base, files=files)
            meta = ApproxMeta()
            if not lost and (base_ms is not None or task.store.copies(partition)):
                writes = False
                meta.failures = task.store.failures(partition, intervals[0][0] - slide)
        copier = Copier(partition, task, meta, writes, _touch)
        for index, (time_ms, events) in enumerate(intervals):
            restored = copier.restore_at(time_ms, lost and index == 0)
            if restored is not None:
                upto = time_ms - slide
                entries = {kb: (p, last, upto, False) for kb, (p, last) in restored.states.items()}
                delta = TrackDelta(partition, None, None, entries, upto, files, origin_ms=time_ms)
            table = tables.of(delta)

            def on_change(
                kb: bytes, key: Any, old: Any, now: Any, drift: ApproxMeta = copier.meta
            ) -> None:
                shown = pickle.loads(kb) if key is None else key
                note_change(drift, task.divergence, kb, old, now, shown)

            _apply_interval(delta, table, time_ms, events, fns, notes, on_change)
            # Keys with events now: their timeouts run from now, which the copy must know
            # (only their key bytes; their states are copied once they have drifted).
            touched = [kb for kb, (p, last, _, _) in delta.entries.items()
                       if p is not None and last == time_ms]  # fmt: skip
            copier.interval_done(
                time_ms,
                partial(_current, delta, table),
                partial(_whole, delta, table),
                touched,
            )
        if not writes and intervals:
            table = tables.of(delta)
            copier.write_base(intervals[-1][0], partial(_whole, delta, table))
    finally:
        tables.close()
    delta.approx = copier.meta
    if notes is not None:
        notes.send()
    copier.send(said)
    return delta
