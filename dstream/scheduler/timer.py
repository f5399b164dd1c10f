"""A recurring timer on an injected clock: calls ``callback(t)`` at ``start, start + period,
...`` until stopped. With a ManualClock it fires exactly when a test advances time."""

from __future__ import annotations

import threading
from collections.abc import Callable

from dstream.clock import Clock
from dstream.time import Duration, Time

__all__ = ["RecurringTimer"]


class RecurringTimer:
    def __init__(
        self, clock: Clock, period: Duration, callback: Callable[[Time], None], name: str
    ) -> None:
        self._clock = clock
        self._period = period
        self._callback = callback
        self._name = name
        self._cancelled = threading.Event()
        self._thread: threading.Thread | None = None
        self.next_time: Time | None = None

    def start(self, first: Time) -> None:
        self.next_time = first
        self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
        self._thread.start()

    def stop(self) -> Time | None:
        """Stop firing; returns the last time that was fired (None if none)."""
        self._cancelled.set()
        self._clock.interrupt()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        if self.next_time is None:
            return None
        return self.next_time - self._period

    def _loop(self) -> None:
        assert self.next_time is not None
        while not self._cancelled.is_set():
            if not self._clock.wait_until(self.next_time, self._cancelled):
                return
            if self._cancelled.is_set():
                return
            self._callback(self.next_time)
            self.next_time = self.next_time + self._period
