"""Fixtures for Spark-backed tests: a StreamingContext on the session SparkContext, driven
by a ManualClock, stopped (without stopping Spark) when the test ends."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from dstream import Duration, ManualClock, StreamingContext, StreamingSettings, Time

# A failed output is still run again twice (the default), but after 10 ms instead of 1 s and
# 2 s: the backoff is wall-clock waiting, which only the tests of retries themselves (they
# set their own settings) are about.
FAST_RETRY = StreamingSettings(output_retry_backoff="10ms")


class Harness:
    """One StreamingContext on a ManualClock, and the moves a test makes with it."""

    def __init__(self, sc: Any, batch_ms: int = 1000, start_ms: int = 0, **kwargs: Any) -> None:
        kwargs.setdefault("settings", FAST_RETRY)
        self.clock = ManualClock(start_ms)
        self.batch_ms = batch_ms
        self.ssc = StreamingContext(sc, Duration(batch_ms), clock=self.clock, **kwargs)

    def run_batches(self, n: int, timeout_s: float = 120.0) -> Time:
        """Advance the clock by n intervals and wait until their batches completed."""
        start = self.clock.now()
        for _ in range(n):
            self.clock.advance(self.batch_ms)
        last = Time((start.ms // self.batch_ms + n) * self.batch_ms)
        assert self.ssc.wait_for_batch(last, timeout_s), f"batch {last} did not complete"
        return last


@pytest.fixture
def harness(sc: Any) -> Iterator[Callable[..., Harness]]:
    made: list[Harness] = []

    def make(batch_ms: int = 1000, start_ms: int = 0, **kwargs: Any) -> Harness:
        h = Harness(sc, batch_ms, start_ms, **kwargs)
        made.append(h)
        return h

    yield make
    for h in made:
        h.ssc.stop(stopSparkContext=False)
