"""The order an output hands over one interval's results (dstream.streams.output.
DeliveryGate): tentative results only before the exact one, never after or during it (issue
#61). Threads and events, no Spark."""

from __future__ import annotations

import threading

import pytest

from dstream.streams.output import DeliveryGate


def test_a_tentative_result_before_the_exact_one_is_delivered_and_none_after() -> None:
    gate, order = DeliveryGate(), []
    assert gate.tentative(1000, lambda: order.append("tentative 1000"))
    gate.exact(1000, lambda: order.append("exact 1000"))
    assert gate.closed(1000) and not gate.closed(2000)
    assert not gate.tentative(1000, lambda: order.append("tentative 1000 again"))
    # Exact results come in interval order: an older interval is closed too.
    assert not gate.tentative(0, lambda: order.append("tentative 0"))
    assert gate.tentative(2000, lambda: order.append("tentative 2000"))
    assert order == ["tentative 1000", "exact 1000", "tentative 2000"]


def test_the_exact_result_waits_for_a_tentative_delivery_under_way() -> None:
    gate, order = DeliveryGate(), []
    exact = threading.Thread(target=gate.exact, args=(1000, lambda: order.append("exact")))

    def deliver() -> None:
        order.append("tentative begins")
        exact.start()
        # The exact delivery closed the interval and waits: it does not run meanwhile.
        exact.join(0.5)
        assert exact.is_alive() and gate.closed(1000)
        order.append("tentative ends")

    assert gate.tentative(1000, deliver)
    exact.join(10)
    assert order == ["tentative begins", "tentative ends", "exact"]


def test_a_failed_tentative_delivery_does_not_hold_the_exact_one() -> None:
    gate, order = DeliveryGate(), []

    def fail() -> None:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        gate.tentative(1000, fail)
    gate.exact(1000, lambda: order.append("exact"))  # returns: nothing under way
    assert order == ["exact"]
