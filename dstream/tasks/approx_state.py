"""Bounded-error recovery of keyed state, inside tasks (AF-Stream's approximate fault
tolerance, its Sec. 3.4-3.5, on D-Streams). Pure Python: no Spark import.

A state under ``approximateRecovery(maxDivergence=Θ)`` is not recomputed from lineage when a
partition is lost. Each partition instead keeps a *copy* in files (under the checkpoint
directory) and, as one more record of the partition (keyed :data:`META`), how far it has
drifted from that copy: every key changed since the copy was written, with its value then,
and the running divergence ``D`` (the sum over those keys of ``divergence(value then, value
now)``). When ``D`` exceeds the partition's threshold ``θ``, the task ships only those keys
(a *delta*; a full *base* once the deltas since the last base outgrow it) and ``D`` is 0
again. So the copy never lags the state by more than ``θ``.

A partition whose cached block is lost (the executor died) reaches the merge as one
:class:`LostBlock` record instead of its state: it is restored from its copy (the newest base
and the deltas after it), and the current interval is folded into it as usual. What the
restore cost is the drift since the copy, at most ``θ``; no interval is recomputed and the
lineage stops there.

:class:`Copier` is that bookkeeping for one partition whatever its state's shape: the dict
of ``updateStateByKey`` here (:func:`merge_approximate`), the snapshot plus delta of
``track`` in :func:`dstream.tasks.track_state.fold_approximate` (whose meta travels in the
delta, and whose copies also name each interval's keys with events, for their timeouts).

The thresholds follow AF-Stream's Sec. 3.5.2-3.5.3: a state of ``n`` partitions starts each
at ``θ = Θ / 2n``, and a partition halves its own after each restore, so after ``k`` failures
it has lost at most ``Θ/2n (1 + 1/2 + ... + 1/2^k) < Θ/n``, and the whole state less than
``Θ`` however many failures there are. With ``Θ = 0`` every change is copied at once and a
restore is exact.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from itertools import zip_longest
from numbers import Number
from typing import TYPE_CHECKING, Any

from dstream.storage.checkpoint import decode, encode
from dstream.tasks.notes import NoteSlot
from dstream.tasks.state_merge import sections

if TYPE_CHECKING:
    from dstream.storage.taskfs import TaskFiles

__all__ = [
    "META",
    "MISSING",
    "ApproxMeta",
    "ApproxTask",
    "Copier",
    "CopyStore",
    "LostBlock",
    "Restored",
    "copy_root",
    "drop_meta",
    "l1",
    "merge_approximate",
    "note_change",
    "threshold",
]

# A full base is written instead of a delta once the deltas since the last base add up to
# more than the base itself (at least this many bytes): a restore reads at most about twice
# the partition.
MIN_BASE_BYTES = 1 << 20
# ... or once there are this many of them: a restore opens at most this many files more.
# (At Θ = 0, or for track(), whose copy names each interval's keys with events, a partition
# writes a delta most intervals, however small.)
MAX_DELTAS = 256


class _Missing:
    """A key that had no value (at the copy, or now: removed)."""

    __slots__ = ()

    def __reduce__(self) -> Any:
        return (_missing, ())

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def _missing() -> Any:
    return MISSING


class MetaKey:
    """The key of a partition's :class:`ApproxMeta` record (one per partition)."""

    __slots__ = ()

    def __reduce__(self) -> Any:
        return (_meta_key, ())

    def __repr__(self) -> str:
        return "META"


META: Any = MetaKey()


def _meta_key() -> Any:
    return META


class LostBlock:
    """The key of the one record the JVM shim's ``StateBlocks`` RDD yields for a partition
    whose cached block no executor holds any more."""

    __slots__ = ()

    def __reduce__(self) -> Any:
        return (LostBlock, ())

    def __repr__(self) -> str:
        return "LOST"


@dataclass
class ApproxMeta:
    """How far one partition has drifted from its copy, and the copy's shape."""

    failures: int = 0  # restores so far: the threshold is halved after each
    divergence: float = 0.0  # D: the sum of the dirty keys' divergences
    # Each key changed since the copy: its value in the copy (MISSING: it had none).
    dirty: dict[Any, Any] = field(default_factory=dict)
    base_bytes: int = 0  # the newest base's size (0: none yet, the empty start)
    delta_bytes: int = 0  # deltas written since that base
    deltas: int = 0  # how many (a META pickled before this field reads the class's 0)


def threshold(max_divergence: float, partitions: int, failures: int) -> float:
    """A partition's share of Θ after ``failures`` restores: ``Θ / 2n / 2^failures``."""
    return max_divergence / (2 * partitions) / (2**failures)


def l1(before: Any, after: Any) -> float:
    """The Manhattan distance of two states: numbers, or tuples, lists and dicts of numbers
    (a missing value, or None, counts as 0)."""
    a = 0 if before is MISSING or before is None else before
    b = 0 if after is MISSING or after is None else after
    if isinstance(a, Number) and isinstance(b, Number):
        return float(abs(b - a))  # type: ignore[operator]
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        a = a if isinstance(a, Mapping) else {}
        b = b if isinstance(b, Mapping) else {}
        return sum(l1(a.get(k), b.get(k)) for k in a.keys() | b.keys())
    if isinstance(a, tuple | list) or isinstance(b, tuple | list):
        a = a if isinstance(a, tuple | list) else ()
        b = b if isinstance(b, tuple | list) else ()
        return sum(l1(x, y) for x, y in zip_longest(a, b, fillvalue=0))
    shown = after if after is not MISSING and after is not None else before
    raise TypeError(
        f"divergence='l1' measures numbers, and tuples, lists or dicts of numbers; a state "
        f"here is {type(shown).__name__} ({shown!r:.80}): pass approximateRecovery(..., "
        "divergence=fn) with fn(state at the copy or None, state now or None) -> float"
    )


@dataclass(frozen=True)
class Restored:
    """A partition read back from its copy."""

    states: dict[Any, Any]
    failures: int  # the restores the copy had seen
    copy_ms: int | None  # the newest file read (None: no copy yet, the empty start)


@dataclass(frozen=True)
class CopyStore:
    """Where one state's copies live: ``<directory>/<partition>/<interval ms>.base|.delta``,
    each file written once (published atomically), checksummed like a checkpoint."""

    files: TaskFiles
    directory: str

    def _dir(self, split: int) -> str:
        return f"{self.directory}/{split:05d}"

    def write(self, split: int, time_ms: int, kind: str, data: bytes) -> int:
        """Publish one copy file (a recomputed partition writes the same bytes again: the
        first stays); returns its size."""
        self.files.publish(f"{self._dir(split)}/{time_ms:013d}.{kind}", data)
        return len(data)

    def copies(self, split: int) -> list[tuple[int, str]]:
        """``(interval ms, "base" | "delta")`` of every file of ``split``, oldest first."""
        out = []
        for name in self.files.list_names(self._dir(split)):
            stem, _, kind = name.partition(".")
            if stem.isdigit() and kind in ("base", "delta"):
                out.append((int(stem), kind))
        return sorted(out)

    def failures(self, split: int, upto_ms: int) -> int:
        """The restores ``split`` had seen by ``upto_ms``, from its newest copy file then (a
        restore always ends in a copy, so that file counts them all). If the files that old
        were pruned, the oldest left: a count too high only halves the threshold once more."""
        files = self.copies(split)
        if not files:
            return 0
        ms, kind = max((f for f in files if f[0] <= upto_ms), default=files[0])
        path = f"{self._dir(split)}/{ms:013d}.{kind}"
        return int(decode(self.files.read_bytes(path), path)[0]["failures"])

    def restore(
        self, split: int, upto_ms: int, touch: Callable[[Any, int], Any] | None = None
    ) -> Restored:
        """The partition as its copies had it after interval ``upto_ms``: the newest base at
        or before it and every delta after that base, in order. A delta's ``touched`` keys
        (track(): those that had events, for their timeouts) are given ``touch(value, its
        interval ms)``."""
        files = [(ms, kind) for ms, kind in self.copies(split) if ms <= upto_ms]
        start = max((i for i, (_, kind) in enumerate(files) if kind == "base"), default=None)
        states: dict[Any, Any] = {}
        failures, newest = 0, None
        for ms, kind in files if start is None else files[start:]:
            path = f"{self._dir(split)}/{ms:013d}.{kind}"
            body = decode(self.files.read_bytes(path), path)[0]
            if kind == "base":
                states = dict(body["records"])
            else:
                for key, value in body["changes"]:
                    if value is MISSING:
                        states.pop(key, None)
                    else:
                        states[key] = value
                if touch is not None:
                    for key in body.get("touched", ()):
                        if key in states:
                            states[key] = touch(states[key], ms)
            failures, newest = body["failures"], ms
        return Restored(states, failures, newest)


@dataclass(frozen=True)
class ApproxTask:
    """What a merge task of an approximately recovered state needs (pickled into it)."""

    stream: int
    max_divergence: float
    partitions: int
    slide_ms: int
    divergence: Callable[[Any, Any], float]
    store: CopyStore
    # Restores a restarted driver replays: interval ms -> {partition: copy ms (-1: none)}.
    restores: Mapping[int, Mapping[int, int]] = field(default_factory=dict)
    min_base_bytes: int = MIN_BASE_BYTES
    max_deltas: int = MAX_DELTAS


def drop_meta(records: Iterable[Any]) -> Iterator[Any]:
    """A partition's ``(key, state)`` records without its META record (the view users see)."""
    for record in records:
        if type(record[0]) is not MetaKey:
            yield record


def merge_approximate(
    split: int,
    records: Iterable[Any],
    update_func: Callable[[list[Any], Any], Any],
    times_ms: list[int],
    task: ApproxTask,
    notes: Any = None,
    on_error: Callable[[int, Any, list[Any], BaseException], None] | None = None,
) -> Iterator[tuple[Any, Any]]:
    """``updateStateByKey`` of partition ``split`` from ``1 + len(times_ms)`` sections (as
    :func:`dstream.tasks.state_merge.merge_update_state`), keeping the partition's copy within
    its threshold. The previous section is the state with its META record, nothing (the
    first interval), or one :class:`LostBlock` record (restored from the copy). ``notes`` (an
    accumulator) hears, per interval, the bytes copied and any restore. ``on_error``: a key
    whose ``update_func`` raises keeps its state and is handed there (quarantine)."""
    parts = sections(records, 1 + len(times_ms))
    states: dict[Any, Any] = {}
    meta: ApproxMeta | None = None
    lost = False
    for key, value in parts[0]:
        kind = type(key)
        if kind is MetaKey:
            meta = value
        elif kind is LostBlock:
            lost = True
        else:
            states[key] = value
    if meta is None:
        meta = ApproxMeta()
    copier = Copier(split, task, meta)
    for index, (time_ms, new) in enumerate(zip(times_ms, parts[1:], strict=True)):
        restored = copier.restore_at(time_ms, lost and index == 0)
        if restored is not None:
            states = restored.states
        _fold_interval(states, copier.meta, new, update_func, task.divergence, time_ms, on_error)
        copier.interval_done(
            time_ms,
            partial(_values_of, states),
            partial(_items_of, states),
        )
    copier.send(notes)
    yield from states.items()
    yield META, copier.meta


def _values_of(states: dict[Any, Any], keys: Iterable[Any]) -> list[tuple[Any, Any]]:
    return [(key, states.get(key, MISSING)) for key in keys]


def _items_of(states: dict[Any, Any]) -> list[tuple[Any, Any]]:
    return list(states.items())


class Copier:
    """One partition's copy-keeping over the intervals of one task, whatever its state's
    shape (``updateStateByKey``'s dict, ``track``'s snapshot and delta): when to restore
    (a lost block, or a journaled restore replayed), when to copy, and the notes to the
    driver. ``writes=False``: the task only folds (a rebuild whose copies another run
    wrote; it ends in :meth:`write_base`)."""

    def __init__(
        self,
        split: int,
        task: ApproxTask,
        meta: ApproxMeta,
        writes: bool = True,
        touch: Callable[[Any, int], Any] | None = None,
    ) -> None:
        self.split, self.task, self.meta, self.writes = split, task, meta, writes
        self._touch = touch  # see CopyStore.restore
        self.said: dict[NoteSlot, Any] = {}
        self._restoring = False

    def restore_at(self, time_ms: int, lost: bool) -> Restored | None:
        """The partition read back from its copy if interval ``time_ms`` restores it (its
        previous block is ``lost``, or a restarted driver replays a journaled restore); the
        meta then starts again, with one failure more."""
        task = self.task
        replayed = task.restores.get(time_ms, {}).get(self.split)
        self._restoring = lost or replayed is not None
        if not self._restoring:
            return None
        upto = time_ms - task.slide_ms if replayed is None else replayed
        restored = task.store.restore(self.split, upto, self._touch)
        bound = threshold(task.max_divergence, task.partitions, restored.failures)
        self.meta = ApproxMeta(failures=restored.failures + 1)
        copy_ms = -1 if restored.copy_ms is None else restored.copy_ms
        self.said[NoteSlot(task.stream, time_ms, self.split, "restored")] = (copy_ms, bound)
        return restored

    def interval_done(
        self,
        time_ms: int,
        current: Callable[[Iterable[Any]], list[tuple[Any, Any]]],
        whole: Callable[[], list[tuple[Any, Any]]],
        touched: list[Any] | None = None,
    ) -> None:
        """Interval ``time_ms`` is folded in: copy the dirty keys if the drift is past the
        threshold. ``current(keys)``: those keys' values now (MISSING: removed); ``whole()``:
        every live ``(key, value)`` (for a base); ``touched``: keys the copy must know had
        events now (track()'s timeouts), written every interval, with the copy or alone."""
        meta, task = self.meta, self.task
        theta = threshold(task.max_divergence, task.partitions, meta.failures)
        written = 0
        # A restore always ends in a copy: the copies carry the count of restores, and a
        # second restore before the next copy would otherwise read the old count, keep the
        # threshold it had and let the error grow past Θ (tests/unit/test_approx_state.py).
        due = self._restoring or (meta.dirty and (meta.divergence > theta or theta == 0))
        if self.writes and (due or touched):
            changes = current(meta.dirty) if due else []
            written = _copy(self.split, time_ms, changes, whole, meta, task, touched, bool(due))
        self._restoring = False
        self.said[NoteSlot(task.stream, time_ms, self.split, "computed")] = written

    def write_base(self, time_ms: int, whole: Callable[[], list[tuple[Any, Any]]]) -> None:
        """A full base at ``time_ms``: the copy is the state again, whatever came before."""
        meta, task = self.meta, self.task
        written = task.store.write(self.split, time_ms, "base", _base(meta, whole()))
        meta.base_bytes, meta.delta_bytes, meta.deltas = written, 0, 0
        meta.dirty, meta.divergence = {}, 0.0
        self.said[NoteSlot(task.stream, time_ms, self.split, "computed")] = written

    def send(self, notes: Any) -> None:
        if notes is not None:
            notes.add(self.said)


def _fold_interval(
    states: dict[Any, Any],
    meta: ApproxMeta,
    new: list[Any],
    update_func: Callable[[list[Any], Any], Any],
    divergence: Callable[[Any, Any], float],
    time_ms: int,
    on_error: Callable[[int, Any, list[Any], BaseException], None] | None,
) -> None:
    """One interval's update of every key with a state or new values, and the drift it adds."""
    news: dict[Any, list[tuple[tuple[int, int], Any]]] = {}
    for key, payload in new:
        news.setdefault(key, []).append(payload)
    for key in list(states.keys() | news.keys()):
        values = [v for _, v in sorted(news.get(key, ()), key=lambda tv: tv[0])]
        old = states.get(key, MISSING)
        # The value as it was, for the drift and the dirty keys: an update may change a
        # state in place (a sketch's array, a dict) and return it, which would otherwise
        # look unchanged and never be copied.
        kept = old if type(old) in _IMMUTABLE else copy.deepcopy(old)
        try:
            result = update_func(values, None if old is MISSING else old)
        except Exception as exc:
            if on_error is None:
                raise
            on_error(time_ms, key, values, exc)
            continue
        if result is None:
            states.pop(key, None)
            now = MISSING
        else:
            states[key] = now = result
        note_change(meta, divergence, key, kept, now)


# States an update cannot change in place (MISSING too): not copied before the update.
_IMMUTABLE = frozenset({int, float, complex, bool, str, bytes, type(None), _Missing})


def note_change(
    meta: ApproxMeta,
    divergence: Callable[[Any, Any], float],
    key: Any,
    old: Any,
    now: Any,
    shown: Any = None,
) -> None:
    """Key ``key`` went from ``old`` to ``now`` (MISSING: no value): add the drift from the
    copy it makes. The first change since the copy remembers the value the copy has.
    ``shown``: the key as an error names it (default ``key``)."""
    if _same(now, old):
        return
    dirty = meta.dirty
    name = key if shown is None else shown
    if key in dirty:
        backed = dirty[key]
        before = _drift(divergence, name, backed, old)
    else:
        dirty[key] = backed = old
        before = 0.0
    meta.divergence += _drift(divergence, name, backed, now) - before


def _drift(divergence: Callable[[Any, Any], float], key: Any, backed: Any, now: Any) -> float:
    drift = float(
        divergence(None if backed is MISSING else backed, None if now is MISSING else now)
    )
    if not math.isfinite(drift) or drift < 0:
        raise ValueError(
            f"the divergence of key {key!r:.60} is {drift!r}; a divergence function must "
            "return a finite number >= 0"
        )
    return drift


def _same(a: Any, b: Any) -> bool:
    """Whether an update left a key's state as it was (a state whose ``==`` is not a truth
    value, a NumPy array say, counts as changed)."""
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:
        return False


def _base(meta: ApproxMeta, records: list[tuple[Any, Any]]) -> bytes:
    return encode([{"failures": meta.failures, "records": records}])


def _copy(
    split: int,
    time_ms: int,
    changes: list[tuple[Any, Any]],
    whole: Callable[[], list[tuple[Any, Any]]],
    meta: ApproxMeta,
    task: ApproxTask,
    touched: list[Any] | None = None,
    settle: bool = True,
) -> int:
    """Ship the dirty keys' ``changes`` and the ``touched`` keys (or, once the deltas since
    the last base outgrow it or are too many to read back, ``whole()``, the whole
    partition). ``settle`` (the dirty keys were shipped) or a base: the copy is then the
    state, nothing is dirty."""
    body: dict[str, Any] = {"failures": meta.failures, "changes": changes}
    if touched:
        body["touched"] = touched
    delta = encode([body])
    too_big = meta.delta_bytes + len(delta) > max(meta.base_bytes, task.min_base_bytes)
    if too_big or meta.deltas >= task.max_deltas:
        written = task.store.write(split, time_ms, "base", _base(meta, whole()))
        meta.base_bytes, meta.delta_bytes, meta.deltas = written, 0, 0
        settle = True
    else:
        written = task.store.write(split, time_ms, "delta", delta)
        meta.delta_bytes += written
        meta.deltas += 1
    if settle:
        meta.dirty = {}
        meta.divergence = 0.0
    return written


def copy_root(root: str, stream_key: str) -> str:
    """Where the copies of the state ``stream_key`` live under the storage root."""
    return f"{root.rstrip('/')}/approx-{stream_key}"
