"""Bounded-error recovery of an ``updateStateByKey`` or ``track`` state, on the driver
(``approximateRecovery``; the tasks' side and the error bound are in
:mod:`dstream.tasks.approx_state`).

Under it a state's interval ``t`` is built from the *blocks* of interval ``t - 1`` as the
executors hold them (:func:`dstream.streams.surviving.surviving`: no Spark dependency on
the previous state, so its lineage is never replayed), and a partition whose block is gone
is restored by its task from the partition's copy. What the driver keeps:

- the restores the tasks made, harvested from their notes when an interval completes
  (interval, partition, the copy it was restored from, the threshold then), journaled with
  the state so that a restarted driver that folds those intervals again restores the same
  partitions from the same copies (its outputs then agree with the live run's);
- that every partition of interval ``t - 1`` was computed before interval ``t`` runs
  (:meth:`Approximation.computed`): a block that was never made must be made, not
  restored;
- the bytes the copies took, for the progress records.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from dstream.tasks.notes import NoteSlot, SlotNotes

if TYPE_CHECKING:
    from pyspark import SparkContext

__all__ = ["Approximation"]

log = logging.getLogger(__name__)


class Approximation:
    """One approximately recovered state's bookkeeping on the driver (not journaled but for
    :attr:`restores`, which the state journals)."""

    def __init__(self, sc: SparkContext, stream_id: int) -> None:
        self._sc = sc
        self._stream = stream_id
        self._acc: Any = None
        self._lock = threading.Lock()
        # interval ms -> {partition: copy ms (-1: the empty start)}: the restores made.
        self.restores: dict[int, dict[int, int]] = {}
        # interval ms -> partitions noted as computed (harvested; the newest few).
        self._computed: dict[int, set[int]] = {}
        self.copy_bytes = 0  # bytes of copies written since this driver started
        # Every restore since this driver started: (interval ms, partition, copy ms, bound).
        self.restore_log: list[tuple[int, int, int, float]] = []

    @property
    def restored(self) -> int:
        """Partitions restored since this driver started."""
        with self._lock:
            return len(self.restore_log)

    def accumulator(self) -> Any:
        with self._lock:
            if self._acc is None:
                self._acc = self._sc.accumulator({}, SlotNotes())
            return self._acc

    def computed(self, time_ms: int) -> set[int]:
        """The partitions of interval ``time_ms`` that a task has computed (harvested, or
        noted by a task that finished since)."""
        with self._lock:
            done = set(self._computed.get(time_ms, ()))
            acc = self._acc
        if acc is not None:
            for slot in list(acc.value):
                if slot.time_ms == time_ms and slot.kind == "computed":
                    done.add(slot.partition)
        return done

    def harvest(self, time_ms: int, label: str) -> None:
        """Take the notes of the intervals up to ``time_ms``: restores, copies, computed."""
        with self._lock:
            acc = self._acc
        if acc is None:
            return
        notes: dict[NoteSlot, Any] = acc.value
        for slot in list(notes):
            if slot.time_ms > time_ms:
                continue
            note = notes.pop(slot, None)
            if note is None:
                continue
            with self._lock:
                if slot.kind == "computed":
                    self._computed.setdefault(slot.time_ms, set()).add(slot.partition)
                    self.copy_bytes += note
                elif slot.kind == "restored":
                    copy_ms, bound = note
                    self.restores.setdefault(slot.time_ms, {})[slot.partition] = copy_ms
                    self.restore_log.append((slot.time_ms, slot.partition, copy_ms, bound))
                    log.warning(
                        "%s: partition %d of interval %d ms restored from its copy of %s "
                        "(lost at most %.6g, its threshold)",
                        label,
                        slot.partition,
                        slot.time_ms,
                        "the empty start" if copy_ms < 0 else f"{copy_ms} ms",
                        bound,
                    )
        with self._lock:
            for old in [ms for ms in self._computed if ms < time_ms]:
                del self._computed[old]

    def forget_restores_upto(self, time_ms: int) -> None:
        """A checkpoint of interval ``time_ms`` is published: rebuilds start after it."""
        with self._lock:
            for ms in [ms for ms in self.restores if ms <= time_ms]:
                del self.restores[ms]

    def journal(self) -> dict[str, list[int]]:
        with self._lock:
            return {str(ms): [p for kv in sorted(r.items()) for p in kv]
                    for ms, r in sorted(self.restores.items())}  # fmt: skip

    def restore_journal(self, saved: dict[str, list[int]]) -> None:
        with self._lock:
            self.restores = {
                int(ms): dict(zip(flat[::2], flat[1::2], strict=True)) for ms, flat in saved.items()
            }
