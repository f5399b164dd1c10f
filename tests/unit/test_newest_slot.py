"""Tentative passes are newest first (#61 item 5): the interval waiting for the worker is
replaced by a newer one, and one take serves the newest."""

from __future__ import annotations

import threading

from dstream.scheduler.recovery_episodes import NewestSlot


def test_a_newer_item_takes_the_waiting_ones_place() -> None:
    slot: NewestSlot[int] = NewestSlot()
    assert slot.take() is None
    assert slot.put(1) is True  # empty: the caller schedules one take
    assert slot.put(2) is False and slot.put(3) is False  # a take is scheduled already
    assert slot.take() == 3
    assert slot.take() is None
    assert slot.put(4) is True  # empty again after the take


def test_every_put_that_found_the_slot_empty_is_followed_by_a_take_that_sees_an_item() -> None:
    """Puts from the loop, takes on the worker: no item is stranded (each put that returns
    False had a take scheduled that has not run yet), whatever the interleaving."""
    slot: NewestSlot[int] = NewestSlot()
    scheduled = threading.Semaphore(0)
    taken: list[int] = []
    done = threading.Event()

    def worker() -> None:
        while True:
            scheduled.acquire()
            item = slot.take()
            if item is not None:
                taken.append(item)
            if item == 9_999:
                done.set()
                return

    thread = threading.Thread(target=worker)
    thread.start()
    for i in range(10_000):
        if slot.put(i):
            scheduled.release()
    assert done.wait(30)
    thread.join(30)
    assert taken == sorted(taken) and taken[-1] == 9_999  # newest last, nothing older after
    assert slot.take() is None
