"""The scheduler's events. Other threads (the timer, job threads, ``stop()``) only post
these; the event loop is the only code that changes the scheduler's state."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dstream.errors import StreamingJobError
from dstream.time import Time

if TYPE_CHECKING:
    from dstream.streams.state_base import StateStream

__all__ = [
    "CheckpointFailed",
    "CheckpointWritten",
    "ExecutorLost",
    "GenerateJobs",
    "JobFinished",
    "JobStarted",
    "LossRecheck",
    "SchedulerEvent",
    "Shutdown",
]


@dataclass(frozen=True, slots=True)
class GenerateJobs:
    """The timer reached the end of the interval ending at ``time``."""

    time: Time


@dataclass(frozen=True, slots=True)
class JobStarted:
    time: Time
    output_index: int
    at_ms: int


@dataclass(frozen=True, slots=True)
class JobFinished:
    time: Time
    output_index: int
    at_ms: int
    error: StreamingJobError | None  # the last attempt's failure, None if one succeeded
    attempts: int = 1


@dataclass(frozen=True, slots=True)
class CheckpointWritten:
    """The checkpointer finished writing ``stream``'s state of ``time`` (posted from its
    thread: the journal record that makes the checkpoint count is written by the loop)."""

    stream: StateStream
    time: Time
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class CheckpointFailed:
    """Every attempt to write ``stream``'s state of ``time`` failed (posted from the
    checkpointer's thread; the loop counts consecutive failures and reports them)."""

    stream: StateStream
    time: Time
    error: BaseException
    attempts: int


@dataclass(frozen=True, slots=True)
class ExecutorLost:
    """An executor was removed (posted by the executor monitor's thread, for the recovery
    episodes of dstream.scheduler.recovery_episodes). The block manager master may still
    list its blocks a moment after: a look that finds nothing lost is posted again by a
    timer, ``look`` counting the looks so far, so the loop never sleeps."""

    executor: str
    look: int = 0


@dataclass(frozen=True, slots=True)
class LossRecheck:
    """One interval after a loss judged quick to recompute (posted by a timer): a recovery
    episode begins if no interval completed since ``completed_upto`` and the partitions of
    ``found`` (per state id: its exact interval, the partitions lost) are still lost."""

    executor: str
    found: Mapping[int, tuple[Time, frozenset[int]]]
    completed_upto: Time | None


@dataclass(frozen=True, slots=True)
class Shutdown:
    """Leave the event loop (posted last by ``stop()``)."""


SchedulerEvent = (
    GenerateJobs
    | JobStarted
    | JobFinished
    | CheckpointWritten
    | CheckpointFailed
    | ExecutorLost
    | LossRecheck
    | Shutdown
)
