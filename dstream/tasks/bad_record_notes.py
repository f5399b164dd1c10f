"""Setting bad records aside inside tasks (``StreamingSettings(bad_records="quarantine")``).

A record whose user function raises is not passed on: the task notes it (its interval, the
operator, the partition, its position in the partition, the record and the error) and goes
on with the next record. What a task noted reaches the driver in one accumulator update
when the partition is done, keyed by ``(interval ms, operator, partition)``: a recomputed
partition (a lost executor, a speculative copy, a replay) sets aside the very same records
under the same key, so the driver counts them once. Pure Python, no Spark import at module
level but the accumulator's base class: the functions here run in Python workers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from pyspark.accumulators import AccumulatorParam

__all__ = [
    "MAX_SAMPLES",
    "Noted",
    "QuarantineParam",
    "Slot",
    "StateNotes",
    "quarantining",
]

# Records kept whole per (interval, operator, partition); beyond them only counted.
MAX_SAMPLES = 20
_TEXT = 500  # characters of a record's or an error's text kept


class Slot(NamedTuple):
    """Where bad records were set aside: one partition of one operator's interval (the
    stream's id tells apart two operators a program called on one line)."""

    time_ms: int
    operator: str
    partition: int
    stream: int = -1


class Noted(NamedTuple):
    """What one partition set aside: how many records, and the first MAX_SAMPLES of them as
    ``(position in the partition, record text, error text)``."""

    total: int
    samples: tuple[tuple[int, str, str], ...]


def _text(value: object) -> str:
    try:
        text = repr(value)
    except Exception as exc:  # a record whose repr raises is still set aside
        text = f"<unprintable {type(value).__name__}: {type(exc).__name__}>"
    return text if len(text) <= _TEXT else text[: _TEXT - 3] + "..."


def _error(exc: BaseException) -> str:
    if type(exc).__name__ == "UserFunctionError" and exc.__cause__ is not None:
        exc = exc.__cause__  # the guard's wrapper: the operator is in the slot already
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= _TEXT else text[: _TEXT - 3] + "..."


class QuarantineParam(AccumulatorParam[dict[Slot, Noted]]):
    """The accumulator's algebra: a dict Slot -> Noted. Two notes of one slot are the same
    partition computed twice; the one that saw more of it wins (a task cut short by
    ``take()`` saw a prefix of what a whole pass sees)."""

    def zero(self, value: dict[Slot, Noted]) -> dict[Slot, Noted]:
        return {}

    def addInPlace(self, value1: dict[Slot, Noted], value2: dict[Slot, Noted]) -> dict[Slot, Noted]:
        for slot, noted in value2.items():
            have = value1.get(slot)
            if have is None or noted.total > have.total:
                value1[slot] = noted
        return value1


class _Notes:
    """The bad records of one partition, sent to the driver when the partition ends."""

    __slots__ = ("_acc", "_samples", "_slot", "count")

    def __init__(self, acc: Any, slot: Slot) -> None:
        self._acc = acc
        self._slot = slot
        self._samples: list[tuple[int, str, str]] = []
        self.count = 0

    def note(self, position: int, record: object, exc: BaseException) -> None:
        self.count += 1
        if len(self._samples) < MAX_SAMPLES:
            self._samples.append((position, _text(record), _error(exc)))

    def send(self) -> None:
        if self.count:
            self._acc.add({self._slot: Noted(self.count, tuple(self._samples))})


def _steps(kind: str, fn: Callable[..., Any]) -> Callable[[Any], Iterable[Any]]:
    """What one record becomes under a per-record operator, as a whole (a ``flatMap``
    record that raises half way emits none of its outputs)."""
    if kind == "map":
        return lambda record: (fn(record),)
    if kind == "filter":
        return lambda record: (record,) if fn(record) else ()
    if kind == "mapValues":
        return lambda record: ((record[0], fn(record[1])),)
    if kind == "flatMap":
        return lambda record: list(fn(record))
    return lambda record: [(record[0], v) for v in fn(record[1])]  # flatMapValues


def quarantining(
    kind: str, fn: Callable[..., Any], operator: str, time_ms: int, acc: Any, stream: int = -1
) -> Callable[[int, Iterable[Any]], Iterator[Any]]:
    """The partition function of a per-record operator (``kind``: map, flatMap, filter,
    mapValues, flatMapValues) that sets aside the records ``fn`` raises on."""
    step = _steps(kind, fn)

    def run(split: int, records: Iterable[Any]) -> Iterator[Any]:
        notes = _Notes(acc, Slot(time_ms, operator, split, stream))
        try:
            for position, record in enumerate(records):
                try:
                    outs = step(record)
                except Exception as exc:
                    notes.note(position, record, exc)
                    continue
                yield from outs
        finally:
            notes.send()

    return run


class StateNotes:
    """The bad records of one state partition (``updateStateByKey``, ``track``): an update
    that raises on a key keeps the key's previous state and sets aside ``(key, what was
    new)``. A rebuild folds several intervals in one task: each is noted under its own."""

    __slots__ = ("_acc", "_notes", "_operator", "_split", "_stream")

    def __init__(self, acc: Any, operator: str, split: int, stream: int = -1) -> None:
        self._acc = acc
        self._operator = operator
        self._split = split
        self._stream = stream
        self._notes: dict[int, _Notes] = {}

    def note(self, time_ms: int, key: Any, new: Any, exc: BaseException) -> None:
        notes = self._notes.get(time_ms)
        if notes is None:
            notes = self._notes[time_ms] = _Notes(
                self._acc, Slot(time_ms, self._operator, self._split, self._stream)
            )
        notes.note(notes.count, (key, new), exc)

    def send(self) -> None:
        for notes in self._notes.values():
            notes.send()
