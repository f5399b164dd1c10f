"""Clocks. The engine never reads the wall clock directly: it is handed a :class:`Clock`.

Production uses :class:`SystemClock`; tests use :class:`ManualClock` and move time by hand,
so a test is a sequence of ``advance`` calls and waits on events, never a ``sleep``.

>>> clock = ManualClock(1000)
>>> clock.advance(500)
Time(1500)
"""

from __future__ import annotations

import contextlib
import threading
import time as _time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Protocol

from dstream.time import Duration, Time

__all__ = ["Clock", "ManualClock", "SystemClock", "default_clock", "programs_use"]

# The clock a StreamingContext built without one gets. Only replay sets it (for the code it
# runs, in its own context: an unchanged program then runs on the replay's clock).
_PROGRAM_CLOCK: ContextVar[Clock | None] = ContextVar("dstream_program_clock", default=None)


def default_clock() -> Clock:
    """What ``StreamingContext(sc, batch)`` runs on when it is given no clock."""
    return _PROGRAM_CLOCK.get() or SystemClock()


@contextlib.contextmanager
def programs_use(clock: Clock) -> Iterator[None]:
    """StreamingContexts created inside this block (in this thread or context) without a
    clock of their own run on ``clock``: how replay runs a program unchanged."""
    token = _PROGRAM_CLOCK.set(clock)
    try:
        yield
    finally:
        _PROGRAM_CLOCK.reset(token)


class Clock(Protocol):
    def now(self) -> Time:
        """The current time."""
        ...

    def wait_until(self, target: Time, cancelled: threading.Event) -> bool:
        """Block until ``now() >= target`` (True) or until ``cancelled`` is set and
        :meth:`interrupt` is called (False)."""
        ...

    def interrupt(self) -> None:
        """Wake every waiter so it can notice that it was cancelled."""
        ...


class SystemClock:
    """Wall-clock time in epoch milliseconds."""

    def now(self) -> Time:
        return Time(_time.time_ns() // 1_000_000)

    def wait_until(self, target: Time, cancelled: threading.Event) -> bool:
        while True:
            remaining = target.ms - self.now().ms
            if remaining <= 0:
                return True
            # Event.wait returns early when the waiter is cancelled.
            if cancelled.wait(remaining / 1000):
                return False

    def interrupt(self) -> None:
        """Waiters wait on their own cancellation event, so there is nothing to wake."""


class ManualClock:
    """A clock that only moves when told to. Thread-safe."""

    def __init__(self, start_ms: int | Time = 0) -> None:
        self._now = start_ms if isinstance(start_ms, Time) else Time(start_ms)
        self._cond = threading.Condition()

    def now(self) -> Time:
        with self._cond:
            return self._now

    def set_time(self, t: int | Time) -> Time:
        target = t if isinstance(t, Time) else Time(t)
        with self._cond:
            if target < self._now:
                raise ValueError(
                    f"ManualClock cannot go back from {self._now} to {target}; "
                    "time only moves forward"
                )
            self._now = target
            self._cond.notify_all()
            return self._now

    def advance(self, by: int | Duration) -> Time:
        step = by if isinstance(by, Duration) else Duration(by)
        with self._cond:
            self._now = self._now + step
            self._cond.notify_all()
            return self._now

    def wait_until(self, target: Time, cancelled: threading.Event) -> bool:
        with self._cond:
            while self._now < target:
                if cancelled.is_set():
                    return False
                self._cond.wait()
            return True

    def interrupt(self) -> None:
        with self._cond:
            self._cond.notify_all()
