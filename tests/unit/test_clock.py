"""Clocks and the recurring timer, with no Spark."""

from __future__ import annotations

import threading

import pytest

from dstream.clock import ManualClock, SystemClock
from dstream.scheduler.timer import RecurringTimer
from dstream.time import Duration, Time


def test_manual_clock_moves_only_forward() -> None:
    clock = ManualClock(100)
    assert clock.now() == Time(100)
    assert clock.advance(50) == Time(150)
    assert clock.advance(Duration(50)) == Time(200)
    assert clock.set_time(1000) == Time(1000)
    with pytest.raises(ValueError, match="cannot go back"):
        clock.set_time(999)


def test_manual_clock_wakes_a_waiter_when_time_reaches_its_target() -> None:
    clock = ManualClock(0)
    reached = threading.Event()
    cancelled = threading.Event()
    waiter = threading.Thread(
        target=lambda: clock.wait_until(Time(1000), cancelled) and reached.set()
    )
    waiter.start()
    clock.advance(999)
    assert not reached.wait(0.05)
    clock.advance(1)
    assert reached.wait(5)
    waiter.join()


def test_a_cancelled_wait_returns_false() -> None:
    clock = ManualClock(0)
    cancelled = threading.Event()
    result: list[bool] = []
    waiter = threading.Thread(target=lambda: result.append(clock.wait_until(Time(10), cancelled)))
    waiter.start()
    cancelled.set()
    clock.interrupt()
    waiter.join(5)
    assert result == [False]


def test_system_clock_is_epoch_milliseconds_and_interruptible() -> None:
    clock = SystemClock()
    assert clock.now().ms > 1_600_000_000_000
    cancelled = threading.Event()
    cancelled.set()
    assert clock.wait_until(clock.now() + Duration(60_000), cancelled) is False
    assert clock.wait_until(clock.now() - Duration(1), threading.Event()) is True


def test_timer_fires_once_per_period_as_the_clock_advances() -> None:
    clock = ManualClock(0)
    fired: list[Time] = []
    third = threading.Event()

    def tick(t: Time) -> None:
        fired.append(t)
        if len(fired) == 3:
            third.set()

    timer = RecurringTimer(clock, Duration(500), tick, "test-timer")
    timer.start(Time(500))
    clock.advance(1600)  # passes 500, 1000 and 1500 at once: each fires, in order
    assert third.wait(5)
    assert timer.stop() == Time(1500)
    assert fired == [Time(500), Time(1000), Time(1500)]
    clock.advance(10_000)
    assert fired == [Time(500), Time(1000), Time(1500)]
