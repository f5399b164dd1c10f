"""Tentative results: one interval's outputs computed again from what survived a lost
executor, beside the exact recomputation (PPA's tentative outputs, on D-Streams).

A :class:`TentativePass` is a second evaluation of the graph for one interval. Inside it
(:func:`current` is set), a stream downstream of a state that lost partitions computes its
RDD afresh: ``DStreamCore._get_or_compute`` hands such streams to the pass instead of their
remembered RDD. A state builds its tentative RDD from its last exact state as the executors
still hold it (:func:`dstream.streams.surviving.surviving`: no lineage, so nothing lost is
recomputed), each lost partition read back from the state's last checkpoint (or empty,
without one), and the interval's input folded in as usual; a stream the loss does not reach
is the exact one. So a tentative result costs about one interval's work.

Each RDD of the pass carries its :class:`~dstream.streams.fidelity.Loss` (PPA's model):
a state's from its :class:`Ledger` (the records each partition folded in, per interval,
which its merge tasks report), everything downstream by its operator's rule.
"""

from __future__ import annotations

import contextvars
import itertools
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dstream.streams.fidelity import Loss, correlated, mix, union
from dstream.tasks.approx_state import LostBlock
from dstream.tasks.notes import NoteSlot, SlotNotes
from dstream.time import Time

if TYPE_CHECKING:
    from pyspark import RDD

    from dstream.streams.base import DStreamCore
    from dstream.streams.copartitioned import SectionMarks
    from dstream.streams.graph import DStreamGraph

__all__ = [
    "Ledger",
    "Saved",
    "StateChain",
    "TentativeNotes",
    "TentativePass",
    "combine",
    "current",
    "section_counter",
    "substituting",
    "substitution",
]

_CURRENT: contextvars.ContextVar[TentativePass | None] = contextvars.ContextVar(
    "dstream_tentative", default=None
)

# Intervals of per-partition rates a ledger keeps (beyond a window's or a checkpoint's span).
KEEP = 600


def current() -> TentativePass | None:
    """The tentative pass the calling thread is in (None: the exact one)."""
    return _CURRENT.get()


class Ledger:
    """What each partition of a state folded in, per interval: the rates of PPA's model.
    Reported by the state's merge tasks (one accumulator per program), harvested when an
    interval completes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_time: dict[int, dict[int, int]] = {}  # interval ms -> partition -> records
        self._order: deque[int] = deque()
        self._cumulative: dict[int, float] = {}  # partition -> records since this driver began

    def record(self, time_ms: int, partition: int, records: int) -> None:
        with self._lock:
            row = self._by_time.get(time_ms)
            if row is None:
                row = self._by_time[time_ms] = {}
                self._order.append(time_ms)
                while len(self._order) > KEEP:
                    self._by_time.pop(self._order.popleft(), None)
            if partition not in row:
                row[partition] = records
                self._cumulative[partition] = self._cumulative.get(partition, 0.0) + records

    def rate(self, time_ms: int, partition: int) -> float:
        """Records of ``partition`` in interval ``time_ms`` (not reported yet: the mean of
        the partition's last ten reported intervals)."""
        with self._lock:
            row = self._by_time.get(time_ms)
            if row is not None and partition in row:
                return float(row[partition])
            seen = [
                self._by_time[t][partition] for t in self._order if partition in self._by_time[t]
            ]
        recent = seen[-10:]
        return sum(recent) / len(recent) if recent else 1.0

    def since(self, partition: int, after_ms: int | None, upto_ms: int, slide_ms: int) -> float:
        """Records of ``partition`` in the intervals after ``after_ms`` up to ``upto_ms``
        (``after_ms`` None: since this driver began)."""
        if after_ms is None:
            with self._lock:
                reported = self._cumulative.get(partition, 0.0)
                # Intervals after upto_ms reported already (the exact pipeline moves on
                # while an episode's fidelity is computed) are not in the state of upto_ms.
                later = [t for t in self._order if t > upto_ms]
                reported -= sum(self._by_time[t].get(partition, 0) for t in later)
                newest = max((t for t in self._order if t <= upto_ms), default=None)
            extra = 0.0
            if newest is not None:
                extra = sum(
                    self.rate(ms, partition)
                    for ms in range(newest + slide_ms, upto_ms + 1, slide_ms)
                )
            return reported + extra
        return sum(
            self.rate(ms, partition) for ms in range(after_ms + slide_ms, upto_ms + 1, slide_ms)
        )


def section_counter(
    notes: Any, stream: int, times_ms: list[int]
) -> Callable[[int], Callable[[list[list[Any]]], None]]:
    """For the merge task of partition ``split``: a callback that hears its input split into
    sections (the previous state, then each interval's records) and notes each interval's
    record count for the state's ledger (no pass of its own over the records)."""

    def for_split(split: int) -> Callable[[list[list[Any]]], None]:
        def note(parts: list[list[Any]]) -> None:
            notes.add(
                {
                    NoteSlot(stream, ms, split, "weight"): len(parts[i + 1])
                    for i, ms in enumerate(times_ms)
                }
            )

        return note

    return for_split


def substituting(
    records: Iterable[Any],
    read_saved: Callable[[], list[Any]] | None,
    on_lost: Callable[[], None] | None = None,
) -> Iterator[Any]:
    """A merge task's input whose previous state may be one ``LostBlock`` record: replaced by
    ``read_saved()`` (the partition's last checkpoint), or by nothing; ``on_lost()`` hears
    that the block was lost."""
    it = iter(records)
    first = next(it, None)
    if first is None:
        return iter(())
    if type(first[0]) is LostBlock:
        if on_lost is not None:
            on_lost()
        saved = [] if read_saved is None else read_saved()
        return itertools.chain(saved, it)
    return itertools.chain([first], it)


@dataclass
class StateChain:
    """What a recovery episode knows of one state: the partitions its last exact state lost,
    and per partition the intervals whose input the tentative state lacks."""

    exact_time: Time  # the last exact state the episode started from
    lost: frozenset[int]
    checkpoint_ms: int | None  # where the lost partitions were read back from
    missing: dict[int, list[int]] = field(default_factory=dict)  # partition -> interval ms
    newest: tuple[Time, RDD[Any]] | None = None  # the newest tentative state of the chain
    recovered: bool = False  # the lost partitions are cached again: the exact state serves


class TentativePass:
    """One interval's tentative evaluation (see the module docstring)."""

    def __init__(
        self,
        graph: DStreamGraph,
        time: Time,
        affected: set[int],
        chains: dict[int, StateChain],
        marks: SectionMarks | None = None,
    ) -> None:
        self.graph = graph
        self.time = time
        self.affected = affected
        self.chains = chains
        # The section marks the pass's state merges read (None: the program's). The
        # program's are a cached shuffle that the loss took too; the exact jobs recompute
        # them in their pool, behind the recomputation, and a tentative merge that shared
        # them waited there (#61 item 5): an episode has its own, computed in its pool.
        self.marks = marks
        self._rdds: dict[tuple[int, int], RDD[Any] | None] = {}
        self._losses: dict[tuple[int, int], Loss] = {}
        self._token: contextvars.Token[TentativePass | None] | None = None
        self.persisted: list[RDD[Any]] = []  # tentative states cached by this pass
        self.superseded: list[RDD[Any]] = []  # older tentative states the pass built on
        # Tentative states read from the blocks that survived (stream id, RDD): which of
        # their partitions were lost is what their tasks find (TentativeNotes.lost_blocks).
        self.read_back: list[tuple[int, RDD[Any]]] = []

    def __enter__(self) -> TentativePass:
        self._token = _CURRENT.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._token is not None
        _CURRENT.reset(self._token)

    def rdd(self, node: DStreamCore[Any], time: Time) -> RDD[Any] | None:
        key = (node.id, time.ms)
        if key not in self._rdds:
            if not node._is_time_valid(time):
                return None
            self._rdds[key] = node._tentative(time, self)
        return self._rdds[key]

    def loss(self, node: DStreamCore[Any], time: Time) -> Loss:
        """The loss of ``node``'s RDD of ``time`` in this pass, from the chains as they are
        now (nothing lost for a stream the failure does not reach)."""
        key = (node.id, time.ms)
        if key in self._losses:
            return self._losses[key]
        if node.id in self.affected:
            rdd = self.rdd(node, time)
            if rdd is None:
                return Loss.none(1)
            self._losses[key] = node._tentative_loss_in(time, self, rdd)
            return self._losses[key]
        exact = node._get_or_compute(time)
        return Loss.none(exact.getNumPartitions() if exact is not None else 1)

    def reassess(self) -> None:
        """Forget the losses worked out so far: a chain learnt of more lost partitions."""
        self._losses.clear()


def combine(rule: str, parents: list[Loss], partitions: int) -> Loss:
    """The loss of an operator's output from its parents' (the rules of
    :mod:`dstream.streams.fidelity`)."""
    if not parents:
        return Loss.none(partitions)
    if rule == "narrow" and len(parents) == 1 and parents[0].partitions == partitions:
        return parents[0]
    if rule == "union":
        joined = union(parents)
        return joined if joined.partitions == partitions else mix(parents, partitions)
    if rule == "correlated":
        out = correlated(parents)
        return out if out.partitions == partitions else mix([out], partitions)
    return mix(parents, partitions)


class TentativeNotes:
    """One program's notes from its state merge tasks for tentative results: the records each
    partition folded in (a state's ledger). Active when any output is tentative."""

    def __init__(self, graph: DStreamGraph) -> None:
        self._graph = graph
        self._acc: Any = None
        self._lock = threading.Lock()
        self.active = False

    def accumulator(self) -> Any:
        with self._lock:
            if self._acc is None:
                self._acc = self._graph.sc.accumulator({}, SlotNotes())
            return self._acc

    def lost_blocks(self, stream: int, time: Time) -> frozenset[int]:
        """The partitions whose block the tentative state of ``stream`` at ``time`` found
        lost (and read back from the checkpoint, or started empty), as its tasks noted."""
        with self._lock:
            acc = self._acc
        if acc is None:
            return frozenset()
        notes: dict[NoteSlot, Any] = acc.value
        mine = [
            slot
            for slot in list(notes)
            if slot.kind == "lost" and slot.stream == stream and slot.time_ms == time.ms
        ]
        for slot in mine:
            notes.pop(slot, None)
        return frozenset(slot.partition for slot in mine)

    def harvest(self, time: Time) -> None:
        """Give each state its partitions' records of the intervals up to ``time``."""
        with self._lock:
            acc = self._acc
        if acc is None:
            return
        notes: dict[NoteSlot, Any] = acc.value
        by_id = {s.id: s for s in self._graph.streams}
        for slot in list(notes):
            if slot.time_ms <= time.ms and slot.kind == "weight":
                records = notes.pop(slot, None)
                stream = by_id.get(slot.stream)
                ledger = getattr(stream, "_ledger", None)
                if records is not None and ledger is not None:
                    ledger.record(slot.time_ms, slot.partition, records)


@dataclass(frozen=True)
class Saved:
    """Where a tentative state reads a lost partition back from: a checkpoint's directory
    (None: nowhere, the partition starts empty); ``notes`` (the program's TentativeNotes
    accumulator, None: not told) hears which partitions were lost, in the slot of ``stream``
    at ``time_ms``."""

    files: Any
    directory: str | None
    notes: Any = None
    stream: int = -1
    time_ms: int = -1

    def reader(self, split: int) -> Callable[[], list[Any]] | None:
        if self.directory is None:
            return None
        from dstream.storage.checkpoint import partition_path, read_partition

        files, path = self.files, partition_path(self.directory, split)
        return lambda: read_partition(files, path)


def substitution(saved: Saved | None) -> Callable[[int, Iterable[Any]], Iterable[Any]] | None:
    """What a tentative merge task does to its input first: a lost block's record is
    replaced by the partition as ``saved`` has it (None: nothing to replace)."""
    if saved is None:
        return None
    notes, stream, time_ms = saved.notes, saved.stream, saved.time_ms

    def substitute(split: int, records: Iterable[Any]) -> Iterable[Any]:
        on_lost = None
        if notes is not None:
            slot = NoteSlot(stream, time_ms, split, "lost")
            on_lost = lambda: notes.add({slot: 1})  # noqa: E731
        return substituting(records, saved.reader(split), on_lost)

    return substitute
