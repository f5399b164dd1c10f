"""Per-partition merges of keyed state, run inside tasks. Pure functions, no Spark.

The state RDD of interval t and the RDDs it is built from share one partitioner, so Spark
unions them partition by partition (a narrow dependency, no shuffle) and one pass here
produces the new state partition. The inputs arrive as *sections*: the union's parents in
order, separated by one :class:`SectionMark` record each (see
:func:`dstream.streams.copartitioned.sectioned_union`), so no input needs a Python pass of
its own just to be tagged — each such pass costs a PySpark task tens of milliseconds.
"""

from __future__ import annotations

import pickle
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dstream.tasks.bad_record_notes import StateNotes

__all__ = [
    "SectionMark",
    "WindowPartition",
    "combine_locally",
    "fold_window",
    "merge_update_state",
    "pack_partial",
    "regroup_window",
    "sections",
    "unpack_partial",
    "window_items",
]


class SectionMark:
    """The record that separates two sections of a sectioned union."""

    __slots__ = ()

    def __reduce__(self) -> Any:
        return (SectionMark, ())


def sections(records: Iterable[Any], count: int) -> list[list[Any]]:
    """Split a sectioned partition into its ``count`` sections."""
    out: list[list[Any]] = [[] for _ in range(count)]
    index = 0
    current = out[0]
    for record in records:
        if type(record[1]) is SectionMark:
            index += 1
            current = out[index]
        else:
            current.append(record)
    return out


class WindowPartition:
    """One partition of a keyed window state with an inverse function, as one record.

    ``totals`` maps each key to ``[value, count]``: its value over the window and how many
    intervals inside the window contributed to it (a key whose count drops to 0 has no
    contribution left and is removed, whatever its value: an inverse function alone cannot
    tell "0 because nothing is left" from "0 because values cancel"). ``ring`` holds, oldest
    first, each interval's own partial values ``{key: value}`` for the intervals still in the
    window, pickled and compressed once when they enter (:func:`pack_partial`); they are
    read once more, when they leave. The partials thus travel with the state (no RDD per
    interval is kept for the window's length), and caching or checkpointing the state copies
    the ring as bytes.
    """

    __slots__ = ("last_ms", "ring", "totals")

    def __init__(
        self,
        totals: dict[Any, list[Any]] | None = None,
        ring: list[tuple[int, bytes]] | None = None,
        last_ms: int | None = None,
    ) -> None:
        self.totals: dict[Any, list[Any]] = {} if totals is None else totals
        self.ring: list[tuple[int, bytes]] = [] if ring is None else ring
        self.last_ms = last_ms  # the newest interval folded in

    def __reduce__(self) -> Any:
        return (WindowPartition, (self.totals, self.ring, self.last_ms))

    def add(self, time_ms: int, pairs: Iterable[tuple[Any, Any]], func: Callable[..., Any]) -> None:
        """Fold in interval ``time_ms``'s records: reduced per key, then added to totals."""
        if self.last_ms is not None and time_ms <= self.last_ms:
            raise ValueError(
                f"interval {time_ms} ms folded after interval {self.last_ms} ms; a window "
                "state takes its intervals in order"
            )
        self.last_ms = time_ms
        partial = combine_locally(pairs, func)
        if not partial:
            return
        totals = self.totals
        for key, value in partial.items():
            slot = totals.get(key)
            if slot is None:
                totals[key] = [value, 1]
            else:
                slot[0] = func(slot[0], value)
                slot[1] += 1
        self.ring.append((time_ms, pack_partial(partial)))

    def evict(self, keep_after_ms: int, inv_func: Callable[..., Any]) -> None:
        """Subtract the intervals at or before ``keep_after_ms`` from totals."""
        totals, ring = self.totals, self.ring
        gone = 0
        while gone < len(ring) and ring[gone][0] <= keep_after_ms:
            for key, value in unpack_partial(ring[gone][1]).items():
                slot = totals[key]
                slot[1] -= 1
                if slot[1]:
                    slot[0] = inv_func(slot[0], value)
                else:
                    del totals[key]
            gone += 1
        del ring[:gone]


def regroup_window(
    parts: Iterable[WindowPartition], keep: Callable[[Any], bool]
) -> WindowPartition:
    """The window state of a new partition (a rescale): the keys ``keep`` accepts from the
    old partitions ``parts``, with their totals and each interval's partials."""
    totals: dict[Any, list[Any]] = {}
    by_time: dict[int, dict[Any, Any]] = {}
    last: list[int] = []
    for part in parts:
        if part.last_ms is not None:
            last.append(part.last_ms)
        for key, slot in part.totals.items():
            if keep(key):
                totals[key] = list(slot)
        for time_ms, entry in part.ring:
            kept = {k: v for k, v in unpack_partial(entry).items() if keep(k)}
            if kept:
                by_time.setdefault(time_ms, {}).update(kept)
    ring = [(t, pack_partial(by_time[t])) for t in sorted(by_time)]
    return WindowPartition(totals, ring, max(last, default=None))


def pack_partial(partial: dict[Any, Any]) -> bytes:
    """An interval's partials as a ring entry: pickled, then compressed (zlib, level 1).

    The ring is most of a window state's bytes (at 0.25 s, 120 intervals of a 30 s window),
    and those bytes cross between the JVM and Python three times an interval: read as the
    previous state, written as the new cached state, read by the output. Compressed, a
    word-count partial is half the size for ~0.6 ms once per interval, and WordCount's
    window task at 0.25 s went from ~100 to ~50 ms (bench/README.md, "The ring compressed").
    """
    return zlib.compress(pickle.dumps(partial, pickle.HIGHEST_PROTOCOL), 1)


def unpack_partial(entry: bytes) -> dict[Any, Any]:
    """A ring entry's partials. An entry a checkpoint written before the compression holds
    is a bare pickle (which starts with the PROTO opcode 0x80, never zlib's first byte)."""
    raw = entry if entry[:1] == b"\x80" else zlib.decompress(entry)
    partial: dict[Any, Any] = pickle.loads(raw)
    return partial


def combine_locally(pairs: Iterable[tuple[Any, Any]], func: Callable[..., Any]) -> dict[Any, Any]:
    """``{key: value}`` with the values of each key reduced by ``func`` in input order."""
    out: dict[Any, Any] = {}
    for key, value in pairs:
        if key in out:
            out[key] = func(out[key], value)
        else:
            out[key] = value
    return out


def fold_window(
    records: Iterable[Any],
    func: Callable[..., Any],
    inv_func: Callable[..., Any],
    times_ms: list[int],
    keep_after_ms: int,
    saved: list[Any] | None = None,
    on_sections: Callable[[list[list[Any]]], None] | None = None,
) -> Iterator[tuple[None, WindowPartition]]:
    """New window state from ``1 + len(times_ms)`` sections: the previous state (nothing, or
    one ``(None, WindowPartition)``), then the ``(key, value)`` records of each interval of
    ``times_ms`` in order; the intervals at or before ``keep_after_ms`` are then subtracted.
    ``saved``, if given, is the previous state instead (a checkpoint's records);
    ``on_sections`` hears the sections once split. Yields the one record of the new state."""
    parts = sections(records, 1 + len(times_ms))
    if on_sections is not None:
        on_sections(parts)
    previous = parts[0] if saved is None else saved
    state = previous[0][1] if previous else WindowPartition()
    for time_ms, pairs in zip(times_ms, parts[1:], strict=True):
        state.add(time_ms, pairs, func)
    state.evict(keep_after_ms, inv_func)
    yield None, state


def window_items(record: tuple[None, WindowPartition]) -> Iterator[tuple[Any, Any]]:
    """The ``(key, value)`` pairs of a window state record."""
    for key, (value, _count) in record[1].totals.items():
        yield key, value


def merge_update_state(
    records: Iterable[Any],
    update_func: Callable[[list[Any], Any], Any],
    intervals: int = 1,
    keep: Callable[[Any], bool] | None = None,
    quarantine: tuple[StateNotes, list[int]] | None = None,
    on_sections: Callable[[list[list[Any]]], None] | None = None,
) -> Iterator[tuple[Any, Any]]:
    """``updateStateByKey`` from ``1 + intervals`` sections: the previous state
    ``(key, state)``, then the new records ``(key, ((source partition, position), value))``
    of each interval in order. For every interval and every key with a state or new values
    the new state is ``update_func(new values in input order, old state or None)``; ``None``
    drops the key. The tag puts a key's values back in input order however the shuffle
    delivered them, so a recomputed interval gives the same state.

    With ``quarantine`` (the notes and each interval's time), a key whose ``update_func``
    raises keeps its previous state and ``(key, new values)`` is set aside. ``on_sections``
    hears the sections once split.
    """
    parts = sections(records, 1 + intervals)
    if on_sections is not None:  # each section's size: the rates of tentative results
        on_sections(parts)
    # keep: after a rescale's split, the previous state holds a sibling partition's keys too.
    states = dict(parts[0]) if keep is None else {k: v for k, v in parts[0] if keep(k)}
    for index, new in enumerate(parts[1:]):
        news: dict[Any, list[tuple[tuple[int, int], Any]]] = {}
        for key, payload in new:
            news.setdefault(key, []).append(payload)
        for key in list(states.keys() | news.keys()):
            values = [v for _, v in sorted(news.get(key, ()), key=lambda tv: tv[0])]
            if quarantine is None:
                new_state = update_func(values, states.get(key))
            else:
                try:
                    new_state = update_func(values, states.get(key))
                except Exception as exc:
                    notes, times_ms = quarantine
                    notes.note(times_ms[index], key, values, exc)
                    continue
            if new_state is None:
                states.pop(key, None)
            else:
                states[key] = new_state
    if quarantine is not None:
        quarantine[0].send()
    return iter(states.items())
