"""Timestep pipelining: interval t+1's tasks run while interval t's still run, yet side
effects happen in depth 1's order and batches complete in interval order; results equal
those of depth 1.

The overlap is proven without timing: interval 1's task blocks until a signal that only
interval 2's task sends (through a relay in the test process, an event wait: no polling).
With pipelining the signal comes while interval 1 waits; without it interval 1 gives up
after a short deadline and says so in its record.
"""

from __future__ import annotations

import contextlib
import random
import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dstream import StreamingListener, Time
from dstream.scheduler.engine import engine_of
from dstream.settings import StreamingSettings
from dstream.testing.streams import BatchCollector, normalize

from .conftest import Harness


class Relay:
    """A Unix socket (abstract namespace) in the test process: a task that connects and
    sends ``s`` sets the signal; a task that sends ``w`` hears ``1`` once it is set."""

    def __init__(self) -> None:
        self.address = f"\0dstream-test-{uuid.uuid4().hex}"
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(self.address)
        self._server.listen(8)
        self._signal = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            if conn.recv(1) == b"s":
                self._signal.set()
            elif self._signal.wait(120):
                # The task may have given up waiting (depth 1) and closed its end.
                with contextlib.suppress(OSError):
                    conn.sendall(b"1")

    def close(self) -> None:
        self._server.close()


@pytest.fixture
def relay() -> Iterator[Relay]:
    r = Relay()
    yield r
    r.close()


def wait_for_signal(address: str, deadline_s: float) -> bool:
    """In a task: whether the relay's signal came within ``deadline_s``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(address)
        s.sendall(b"w")
        s.settimeout(deadline_s)
        try:
            return s.recv(1) == b"1"
        except TimeoutError:
            return False


def send_signal(address: str) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(address)
        s.sendall(b"s")


def blocking_map(address: str, wait_on: Any, sends: Any, deadline_s: float) -> Any:
    """A map for one-partition intervals: the record ``wait_on`` waits for the relay's
    signal, the record ``sends`` sends it."""

    def f(x: Any) -> Any:
        if x == sends:
            send_signal(address)
        if x == wait_on:
            return (x, wait_for_signal(address, deadline_s))
        return (x, None)

    return f


class CompletionOrder(StreamingListener):
    def __init__(self) -> None:
        self.completed: list[int] = []

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        self.completed.append(batchCompleted.batchInfo().batchTime().ms)


@pytest.mark.parametrize("depth", [1, 2])
def test_interval_two_computes_while_interval_one_waits_and_outputs_stay_in_order(
    harness: Any, relay: Relay, depth: int
) -> None:
    h: Harness = harness(settings=StreamingSettings(pipelining_depth=depth))
    sc = h.ssc.sparkContext
    # Depth 1 cannot overlap, so interval 1 gives up after a short deadline.
    deadline = 60.0 if depth > 1 else 2.0
    stream = h.ssc.queueStream([sc.parallelize([x], 1) for x in range(4)])
    calls: list[tuple[Time, list[Any]]] = []
    stream.map(blocking_map(relay.address, 0, 1, deadline)).foreachRDD(
        lambda t, rdd: calls.append((t, rdd.collect()))
    )
    order = CompletionOrder()
    h.ssc.addStreamingListener(order)
    h.ssc.start()
    h.run_batches(4)
    engine_of(h.ssc).bus.wait_until_empty(30)
    assert calls == [
        (Time(1000), [(0, depth > 1)]),
        (Time(2000), [(1, None)]),
        (Time(3000), [(2, None)]),
        (Time(4000), [(3, None)]),
    ]
    assert order.completed == [1000, 2000, 3000, 4000]


def test_side_effects_keep_depth_ones_order_across_outputs(harness: Any, relay: Relay) -> None:
    # Output A runs every interval; output B, a window sliding every 2 intervals, runs at
    # 2 s and 4 s. B's job of 2 s computes only once A's job of 3 s has computed: the two
    # overlap, yet every side effect happens in the order depth 1 gives (A1 A2 B2 A3 A4 B4)
    # and batches complete in interval order.
    h: Harness = harness(settings=StreamingSettings(pipelining_depth=3))
    sc = h.ssc.sparkContext
    stream = h.ssc.queueStream([sc.parallelize([x], 1) for x in range(4)])
    effects: list[tuple[str, int, list[Any]]] = []
    stream.map(blocking_map(relay.address, None, 2, 60.0)).foreachRDD(
        lambda t, rdd: effects.append(("A", t.ms, rdd.collect()))
    )
    stream.window("2s", "2s").map(blocking_map(relay.address, 1, None, 60.0)).foreachRDD(
        lambda t, rdd: effects.append(("B", t.ms, sorted(rdd.collect())))
    )
    order = CompletionOrder()
    h.ssc.addStreamingListener(order)
    h.ssc.start()
    h.run_batches(4)
    engine_of(h.ssc).bus.wait_until_empty(30)
    assert effects == [
        ("A", 1000, [(0, None)]),
        ("A", 2000, [(1, None)]),
        # B of 2 s got the signal that A of 3 s sent: the two computed at the same time.
        ("B", 2000, [(0, None), (1, True)]),
        ("A", 3000, [(2, None)]),
        ("A", 4000, [(3, None)]),
        ("B", 4000, [(2, None), (3, None)]),
    ]
    assert order.completed == [1000, 2000, 3000, 4000]


def stateful_program(stream: Any) -> Any:
    words = stream.flatMap(lambda line: line.split()).map(lambda w: (w, 1))
    windowed = words.reduceByKeyAndWindow(lambda a, b: a + b, lambda a, b: a - b, "3s", "1s")
    totals = words.updateStateByKey(lambda new, old: sum(new) + (old or 0))
    sessions = words.track(lambda k, v: v, lambda k, s, v: s + v, "2s")
    return (
        windowed.map(lambda kv: ("w", kv))
        .union(totals.map(lambda kv: ("t", kv)))
        .union(sessions.map(lambda kv: ("s", kv)))
    )


def test_a_stateful_program_gives_the_same_results_at_every_depth(
    harness: Any, tmp_path: Path
) -> None:
    rng = random.Random(11)
    vocabulary = ["a", "b", "c", "d", "e"]
    batches = [
        [" ".join(rng.choice(vocabulary) for _ in range(rng.randrange(0, 6))) for _ in range(8)]
        for _ in range(10)
    ]
    results = {}
    for depth in (1, 3):
        h: Harness = harness(settings=StreamingSettings(pipelining_depth=depth))
        sc = h.ssc.sparkContext
        h.ssc.checkpoint(str(tmp_path / f"depth-{depth}"))
        stream = h.ssc.queueStream([sc.parallelize(b, 2) for b in batches])
        got = BatchCollector(stateful_program(stream))
        h.ssc.start()
        h.run_batches(len(batches))
        h.ssc.stop(stopSparkContext=False)
        results[depth] = [normalize(b) for b in got.in_order()]
    assert len(results[1]) == len(batches)
    assert results[3] == results[1]
