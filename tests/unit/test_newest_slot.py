"""Tentative passes are newest first (#61 item 5): the interval waiting for the worker is
replaced by a newer one, never by an older one, and one take serves the newest."""

from __future__ import annotations

import threading

from dstream.scheduler.recovery_episodes import NewestSlot
from dstream.time import Time


def test_a_newer_interval_takes_the_waiting_ones_place_and_an_older_one_does_not() -> None:
    slot = NewestSlot()
    assert slot.take() is None
    assert slot.put(Time(1000)) is True  # empty: the caller schedules one take
    assert slot.put(Time(3000)) is False  # a take is scheduled already
    # An older interval (the first results' pending ones, offered after a newer interval
    # came in) does not replace the newer one.
    assert slot.put(Time(2000)) is False
    assert slot.take() == Time(3000)
    assert slot.take() is None
    assert slot.put(Time(4000)) is True  # empty again after the take


def test_every_put_that_found_the_slot_empty_is_followed_by_a_take_that_sees_an_item() -> None:
    """Puts from the loop, takes on the worker: no interval is stranded (each put that
    returns False had a take scheduled that has not run yet), whatever the interleaving."""
    slot = NewestSlot()
    scheduled = threading.Semaphore(0)
    taken: list[Time] = []
    done = threading.Event()
    last = Time(10_000 * 1000)

    def worker() -> None:
        while True:
            scheduled.acquire()
            time = slot.take()
            if time is not None:
                taken.append(time)
            if time == last:
                done.set()
                return

    thread = threading.Thread(target=worker)
    thread.start()
    for i in range(1, 10_001):
        if slot.put(Time(i * 1000)):
            scheduled.release()
    assert done.wait(30)
    thread.join(30)
    assert taken == sorted(taken) and taken[-1] == last  # newest last, nothing older after
    assert slot.take() is None
