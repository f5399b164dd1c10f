"""The scheduler's events. Other threads (the timer, job threads, ``stop()``) only post
these; the event loop is the only code that changes the scheduler's state."""

from __future__ import annotations

from dataclasses import dataclass

from dstream.errors import StreamingJobError
from dstream.time import Time

__all__ = ["Event", "GenerateJobs", "JobFinished", "JobStarted", "Shutdown"]


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
    error: StreamingJobError | None


@dataclass(frozen=True, slots=True)
class Shutdown:
    """Leave the event loop (posted last by ``stop()``)."""


Event = GenerateJobs | JobStarted | JobFinished | Shutdown
