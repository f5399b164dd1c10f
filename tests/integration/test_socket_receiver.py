"""socketTextStream against a real local TCP server: bad bytes, line terminators, a bounded
buffer that blocks the sender (TCP backpressure), and a server that goes away and comes back
(the receiver restarts, reports each error to the listener, and loses no line sent after it
reconnected)."""

from __future__ import annotations

import select
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

from dstream import StreamingListener, StreamingSettings
from dstream.scheduler.engine import engine_of
from dstream.testing.streams import BatchCollector

from .conftest import Harness

WAIT_S = 60
T0 = 1_700_000_000_000  # the streaming clock's time when the tests start (epoch ms)


class LineServer:
    """A listening socket on 127.0.0.1; ``accept()`` waits for the receiver to connect."""

    def __init__(self, port: int = 0) -> None:
        self.listener = socket.create_server(("127.0.0.1", port))
        self.port: int = self.listener.getsockname()[1]
        self.conns: list[socket.socket] = []

    def accept(self) -> socket.socket:
        self.listener.settimeout(WAIT_S)
        conn, _ = self.listener.accept()
        self.conns.append(conn)
        return conn

    def close(self) -> None:
        for conn in self.conns:
            conn.close()
        self.listener.close()


class ReceiverEvents(StreamingListener):
    """Every receiver event, as (kind, ReceiverInfo); tests wait for them."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self._cond = threading.Condition()

    def _add(self, kind: str, event: Any) -> None:
        with self._cond:
            self.events.append((kind, event.receiverInfo()))
            self._cond.notify_all()

    def onReceiverStarted(self, receiverStarted: Any) -> None:
        self._add("started", receiverStarted)

    def onReceiverError(self, receiverError: Any) -> None:
        self._add("error", receiverError)

    def onReceiverStopped(self, receiverStopped: Any) -> None:
        self._add("stopped", receiverStopped)

    def of(self, kind: str) -> list[Any]:
        with self._cond:
            return [info for k, info in self.events if k == kind]

    def wait(self, kind: str, count: int) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: len(self.of(kind)) >= count, WAIT_S)


def socket_program(
    harness: Callable[..., Harness], port: int, **settings: Any
) -> tuple[Harness, Any, BatchCollector, ReceiverEvents]:
    h = harness(start_ms=T0, settings=StreamingSettings(receiver_restart_delay="50ms", **settings))
    stream = h.ssc.socketTextStream("127.0.0.1", port)
    out = BatchCollector(stream)
    events = ReceiverEvents()
    h.ssc.addStreamingListener(events)
    return h, engine_of(h.ssc).graph.inputs[0], out, events


def test_a_bad_byte_is_replaced_and_costs_no_line(harness: Any) -> None:
    server = LineServer()
    h, source, out, events = socket_program(harness, server.port)
    h.ssc.start()
    try:
        conn = server.accept()
        # One chunk: an invalid byte in the middle must not cost the lines around it.
        conn.sendall(b"good1\nba\xffd\ngood2\n")
        conn.sendall(b"next\n")
        assert source._wait_for_buffered(4, WAIT_S), "the receiver stopped reading"
        h.run_batches(1)
        assert out.in_order() == [["good1", "ba\ufffdd", "good2", "next"]]
        assert events.of("error") == []
    finally:
        h.ssc.stop(stopSparkContext=False)
        server.close()


def test_line_terminators_are_stripped_as_spark_does(harness: Any) -> None:
    server = LineServer()
    h, source, out, events = socket_program(harness, server.port)
    h.ssc.start()
    try:
        conn = server.accept()
        conn.sendall(b"crlf\r\nlone\rcr\n\r\nend\r")
        conn.sendall(b"\nafter")  # the \n ends nothing: it belongs to the \r before it
        conn.close()  # at the end of the stream, the text after the last terminator is a line
        assert source._wait_for_buffered(6, WAIT_S)
        h.run_batches(1)
        assert out.in_order() == [["crlf", "lone", "cr", "", "end", "after"]]
        # The server closing the stream is reported, and the receiver reconnects.
        assert events.wait("error", 1)
        assert "no more data" in events.of("error")[0].lastErrorMessage()
        server.accept()
    finally:
        h.ssc.stop(stopSparkContext=False)
        server.close()


LINE_BYTES = 200


def numbered(i: int) -> bytes:
    return f"line {i:09d} ".encode().ljust(LINE_BYTES - 1, b"x") + b"\n"


def test_a_full_buffer_blocks_the_sender_and_loses_nothing(harness: Any) -> None:
    bound = 5000
    server = LineServer()
    h, source, out, _ = socket_program(harness, server.port, receiver_max_buffered=bound)
    h.ssc.start()
    sender: threading.Thread | None = None
    try:
        conn = server.accept()
        conn.setblocking(False)
        # Send as fast as the receiver takes it, never running an interval: once it holds
        # `bound` lines it stops reading, the socket buffers fill and the sender is blocked.
        cap = 64 << 20
        sent_lines, pending, blocked = 0, b"", False
        while sent_lines * LINE_BYTES < cap:
            if not pending:
                pending = b"".join(numbered(sent_lines + i) for i in range(100))
                sent_lines += 100
            try:
                pending = pending[conn.send(pending) :]
            except BlockingIOError:
                _, writable, _ = select.select([], [conn], [], 2.0)
                if not writable:  # no room for 2 s: the receiver is not reading
                    blocked = True
                    break
        assert blocked, f"the sender was never blocked: {sent_lines} lines went through"
        assert source._wait_for_buffered(bound, WAIT_S)
        # Nothing was dropped meanwhile: the rest of the lines go out once intervals run.
        total = sent_lines + 3 * bound
        rest = pending + b"".join(numbered(i) for i in range(sent_lines, total))

        def send_rest() -> None:
            conn.setblocking(True)
            conn.sendall(rest)

        sender = threading.Thread(target=send_rest, daemon=True)
        sender.start()
        received = 0
        while received < total:
            assert source._wait_for_buffered(min(bound, total - received), WAIT_S)
            h.run_batches(1)
            batches = out.in_order()
            assert len(batches[-1]) <= bound, "the buffer held more lines than its bound"
            received = sum(len(b) for b in batches)
        batches = out.in_order()
        assert len(batches[0]) == bound
        got = [line for batch in batches for line in batch]
        assert got == [numbered(i)[:-1].decode() for i in range(total)]  # all, in order
    finally:
        h.ssc.stop(stopSparkContext=False)
        if sender is not None:
            sender.join(WAIT_S)
        server.close()


def test_the_receiver_restarts_reports_errors_and_loses_no_line_after_reconnecting(
    harness: Any,
) -> None:
    server = LineServer()
    port = server.port
    h, source, out, events = socket_program(harness, port)
    h.ssc.start()
    try:
        conn = server.accept()
        conn.sendall(b"before 1\nbefore 2\n")
        assert source._wait_for_buffered(2, WAIT_S)
        # The server goes away: its listening socket first (reconnecting is refused), then
        # the connection, with a reset.
        server.listener.close()
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()
        server.conns.clear()
        assert events.wait("error", 2)  # the reset, then at least one refused reconnection
        errors = events.of("error")
        assert "reset" in errors[0].lastErrorMessage().lower()
        assert "refused" in errors[1].lastErrorMessage().lower()
        server = LineServer(port)  # the server comes back on the same port
        conn = server.accept()
        conn.sendall(b"after 1\nafter 2\n")
        assert source._wait_for_buffered(4, WAIT_S)
        h.run_batches(1)
        assert out.in_order() == [["before 1", "before 2", "after 1", "after 2"]]
        assert events.wait("started", 2)  # two connections
    finally:
        h.ssc.stop(stopSparkContext=False)
        server.close()
    # stop() delivered every event posted before it returned.
    started, error, stopped = events.of("started")[0], errors[0], events.of("stopped")[-1]
    sid = source.id
    assert (started.streamId(), started.name(), started.active()) == (
        sid,
        f"SocketReceiver-{sid}",
        True,
    )
    assert started.location() and started.lastErrorTime() == -1
    assert (error.streamId(), error.active()) == (sid, False)
    assert error.lastError() and error.lastErrorTime() == T0  # the streaming clock's time
    assert (stopped.streamId(), stopped.active()) == (sid, False)


class Completed(StreamingListener):
    """Each completed batch's time, in order; tests wait for one (delivered after the
    engine's own listeners, so the backpressure rate of that batch is set by then)."""

    def __init__(self) -> None:
        self.times: list[int] = []
        self._cond = threading.Condition()

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        with self._cond:
            self.times.append(batchCompleted.batchInfo().batch_time.ms)
            self._cond.notify_all()

    def wait(self, ms: int) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: ms in self.times, WAIT_S)


def _slow(line: str) -> str:
    import time

    time.sleep(0.0005)  # a cost per record: the rate processed is well below what is sent
    return line


def test_backpressure_caps_each_interval_at_the_learned_rate_and_loses_nothing(
    harness: Any,
) -> None:
    """StreamingSettings(backpressure=True): after an interval, the PID estimator's rate
    (dstream.scheduler.elastic) caps what the receiver holds for the next one, so a sender
    with far more to send is slowed by TCP; every line still arrives once, in order."""
    server = LineServer()
    h = harness(start_ms=T0, settings=StreamingSettings(backpressure=True))
    source = h.ssc.socketTextStream("127.0.0.1", server.port)
    out = BatchCollector(source.map(_slow))
    done = Completed()
    h.ssc.addStreamingListener(done)
    h.ssc.start()
    sender: threading.Thread | None = None
    try:
        conn = server.accept()
        first = 1000
        conn.sendall(b"".join(numbered(i) for i in range(first)))
        assert source._node._wait_for_buffered(first, WAIT_S)
        assert source._node._rate_limit is None  # nothing learnt yet: no cap
        t = h.run_batches(1)
        assert done.wait(t.ms)
        rate = source._node._rate_limit
        # A rate is learnt; its value is the records processed per second of wall clock,
        # which a loaded machine lowers (59-97 under a load of 20-35, where ">= 100" failed):
        # what the design promises is the cap that follows from it, checked below.
        assert rate is not None and rate > 0
        assert h.ssc.lastProgress["sources"][0]["rateLimit"] == round(rate, 1)
        allowance = max(1, int(rate * h.batch_ms / 1000))
        total = first + 3 * allowance + 7
        rest = b"".join(numbered(i) for i in range(first, total))
        sender = threading.Thread(target=conn.sendall, args=(rest,), daemon=True)
        sender.start()
        # The first capped interval holds the allowance exactly (the buffer was empty
        # when the rate was set, and the sender has more).
        assert source._node._wait_for_buffered(allowance, WAIT_S)
        t = h.run_batches(1)
        assert done.wait(t.ms)
        assert len(out.in_order()[-1]) == allowance
        caps = [allowance]  # the cap after each interval
        while (received := sum(len(b) for b in out.in_order())) < total:
            rate = source._node._rate_limit
            assert rate is not None
            caps.append(max(1, int(rate * h.batch_ms / 1000)))
            assert source._node._wait_for_buffered(min(caps[-1], total - received), WAIT_S)
            t = h.run_batches(1)
            assert done.wait(t.ms)
            # Lines buffered before the rate changed were held under the cap before it.
            assert len(out.in_order()[-1]) <= max(caps[-2:])
        got = [line for batch in out.in_order() for line in batch]
        assert got == [numbered(i)[:-1].decode() for i in range(total)]  # all, once, in order
    finally:
        h.ssc.stop(stopSparkContext=False)
        if sender is not None:
            sender.join(WAIT_S)
        server.close()


def test_lines_received_after_a_restart_never_go_to_the_intervals_of_its_downtime(
    sc: Any, tmp_path: Any, monkeypatch: Any
) -> None:
    """Spark's recoverable_network_wordcount.py, its driver killed and restarted: the
    restarted driver generates the intervals missed while it was down, all of which ended
    before its receiver connected again. A line must never be in an interval that ended
    before it was received, so those intervals are empty and what the server sent on the
    new connection goes to the first interval that ends after it arrived (pyspark puts
    every line in its arrival interval). The first catch-up interval is held until the
    lines are in the receiver's buffer, as when the receiver is quick to reconnect."""
    from dstream import Duration, ManualClock, StreamingContext, Time
    from dstream.sources.socket import SocketInputDStream

    b = 1000
    server = LineServer()
    ckpt, out = tmp_path / "ckpt", tmp_path / "out"

    def setup(clock: ManualClock) -> StreamingContext:
        ssc = StreamingContext(sc, Duration(b), clock=clock)
        ssc.checkpoint(str(ckpt))
        ssc.socketTextStream("127.0.0.1", server.port).saveAsTextFiles(f"{out}/lines")
        return ssc

    def socket_source(ssc: StreamingContext) -> Any:
        (source,) = engine_of(ssc).graph.inputs
        return source

    try:
        clock = ManualClock(T0 + 200)
        first = setup(clock)
        first.start()
        server.accept().sendall(b"before\n")
        assert socket_source(first)._wait_for_buffered(1, WAIT_S)
        clock.advance(b - 200)
        assert first.wait_for_batch(Time(T0 + b), WAIT_S)
        first.stop(stopSparkContext=False)  # the driver is gone; intervals 2-5 are missed

        restarted_at = T0 + 5 * b + 200
        read = SocketInputDStream._read

        def first_catch_up_after_the_lines(self: Any, time: Any) -> Any:
            if time.ms == T0 + 2 * b:
                assert self._wait_for_buffered(3, WAIT_S)
            return read(self, time)

        monkeypatch.setattr(SocketInputDStream, "_read", first_catch_up_after_the_lines)
        clock = ManualClock(restarted_at)
        second = StreamingContext.getOrCreate(str(ckpt), lambda: setup(clock), clock=clock)
        second.start()
        server.accept().sendall(b"one\ntwo\nthree\n")
        # The clock stays at restarted_at until the catch-up intervals are done, the first
        # of which waited for the lines: they were received at restarted_at.
        assert second.wait_for_batch(Time(T0 + 5 * b), WAIT_S)
        clock.advance(T0 + 6 * b - restarted_at)
        assert second.wait_for_batch(Time(T0 + 6 * b), WAIT_S)
        second.stop(stopSparkContext=False)
    finally:
        server.close()

    committed = {}
    for d in out.glob("lines-*"):
        lines = [ln for p in sorted(d.glob("part-*")) for ln in p.read_text().splitlines()]
        committed[int(d.name.rsplit("-", 1)[1])] = sorted(lines)
    assert sorted(committed) == [T0 + i * b for i in range(1, 7)]
    assert committed[T0 + b] == ["before"]
    late = {end: lines for end, lines in committed.items() if set(lines) & {"one", "two"}}
    assert all(end > restarted_at for end in late), f"received at {restarted_at}: {late}"
    assert committed[T0 + 6 * b] == ["one", "three", "two"]
    assert all(committed[T0 + i * b] == [] for i in range(2, 6))
