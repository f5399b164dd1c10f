"""What tasks tell the driver about the partitions they computed, in one accumulator: a dict
keyed by a slot (a stream, an interval, a partition). A partition computed twice (a
speculative copy, a recomputation after a loss) notes the same slot again, and the first
note to reach the driver stands, so the driver counts each partition once. Pure Python but
the accumulator's base class: it runs in Python workers."""

from __future__ import annotations

from typing import Any, NamedTuple

from pyspark.accumulators import AccumulatorParam

__all__ = ["NoteSlot", "SlotNotes"]


class NoteSlot(NamedTuple):
    """One partition of one stream's interval, and what kind of note it is."""

    stream: int
    time_ms: int
    partition: int
    kind: str


class SlotNotes(AccumulatorParam[dict[NoteSlot, Any]]):
    """The accumulator's algebra: a dict NoteSlot -> note; the first note of a slot wins."""

    def zero(self, value: dict[NoteSlot, Any]) -> dict[NoteSlot, Any]:
        return {}

    def addInPlace(
        self, value1: dict[NoteSlot, Any], value2: dict[NoteSlot, Any]
    ) -> dict[NoteSlot, Any]:
        for slot, note in value2.items():
            value1.setdefault(slot, note)
        return value1
