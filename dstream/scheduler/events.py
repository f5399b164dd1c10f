"""The scheduler's events. Other threads (the timer, job threads, ``stop()``) only post
these; the event loop is the only code that changes the scheduler's state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dstream.errors import StreamingJobError
from dstream.time import Time

if TYPE_CHECKING:
    from dstream.streams.state_base import StateStream

__all__ = [
    "CheckpointFailed",
    "CheckpointWritten",
    "GenerateJobs",
    "JobFinished",
    "JobStarted",
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
class Shutdown:
    """Leave the event loop (posted last by ``stop()``)."""


SchedulerEvent = (
    GenerateJobs | JobStarted | JobFinished | CheckpointWritten | CheckpointFailed | Shutdown
)
