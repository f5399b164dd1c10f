"""What one interval of a node does, declared by the node in a form a plan over many
intervals can run (the replay stretch, :mod:`dstream.scheduler.stretch`, runs a stretch of
intervals as one Spark job from these, and needs no node's class or fields).

A node that declares none (:meth:`~dstream.streams.base.DStreamCore.plan_step` returns
None) is computed interval by interval, as live."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from dstream.time import Time

__all__ = ["KeyedReduce", "PerRecord", "PlanStep", "ReadsTextLines", "TextLinesSource"]


@dataclass(frozen=True)
class PerRecord:
    """The records of each partition through ``fn`` (map, flatMap, filter, mapValues,
    flatMapValues): the same function whatever the interval."""

    fn: Callable[[Iterable[Any]], Iterable[Any]]


@dataclass(frozen=True)
class KeyedReduce:
    """``reduceByKey(func, partitions)`` of the node's parent."""

    func: Callable[[Any, Any], Any]
    partitions: int


class TextLinesSource(Protocol):
    """A source whose intervals are the lines of files it chose (textFileStream)."""

    @property
    def label(self) -> str: ...

    @property
    def directory(self) -> str: ...

    def files_for(self, time: Time) -> list[str]: ...

    def recorded_files(self, time: Time) -> list[str] | None: ...

    def set_record_count(self, time: Time, count: int) -> None: ...


@dataclass(frozen=True)
class ReadsTextLines:
    """Each interval is the text lines of the files ``source`` chose for it."""

    source: TextLinesSource


PlanStep = PerRecord | KeyedReduce | ReadsTextLines
