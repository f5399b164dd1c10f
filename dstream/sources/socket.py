"""``socketTextStream``: lines read from a TCP server by a receiver thread on the driver.

Each interval takes the lines received since the previous one. The receiver behaves as
Spark's ``SocketReceiver`` (under its ``ReceiverSupervisor``):

* bytes become lines as Java's ``BufferedReader.readLine`` makes them
  (:mod:`dstream.sources.lines`): malformed UTF-8 becomes U+FFFD, ``\\n``, ``\\r`` and
  ``\\r\\n`` end a line and are stripped;
* it holds at most ``StreamingSettings.receiver_max_buffered`` lines: when that many wait for
  the next interval it stops reading the socket until an interval takes them, so the
  kernel's buffers fill and TCP slows the sender down; nothing is dropped;
* when it cannot connect, the connection fails (reset...) or the server ends the stream, it
  reports the error to the listeners (``onReceiverError``) and connects again after
  ``StreamingSettings.receiver_restart_delay``; ``onReceiverStarted`` follows each
  connection and ``onReceiverStopped`` the context's ``stop()``. A line cut by a failed
  connection is lost with it (a stream that ends cleanly gives its last line).

Each line goes to the first interval that ends after it was received (on the streaming
clock): an interval takes the buffered lines received before its end and leaves the later
ones to the next. So a line is never in an interval that ended before it arrived: the
intervals a restarted driver generates for its downtime, which all ended before its receiver
connected again, are empty (what was sent meanwhile goes to the first interval after the
restart), and a late interval (a backlog) takes only what arrived before its end.

A plain TCP text protocol has no acknowledgements, so the sender cannot resend what a crashed
driver had received: this source is as (un)reliable as pyspark.streaming's. Use a file source
for input that must survive a driver failure.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import traceback
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from dstream.jvm import live_conf
from dstream.listener import (
    ReceiverInfo,
    StreamingListenerReceiverError,
    StreamingListenerReceiverStarted,
    StreamingListenerReceiverStopped,
)
from dstream.sources.base import InputDStream
from dstream.sources.lines import LineDecoder
from dstream.time import Time

if TYPE_CHECKING:
    from pyspark import RDD

    from dstream.streams.graph import DStreamGraph

__all__ = ["SocketInputDStream"]

log = logging.getLogger(__name__)

_CHUNK_BYTES = 64 * 1024
_CONNECT_TIMEOUT_S = 10.0


class SocketInputDStream(InputDStream):
    _counts_in_tasks = False

    def __init__(self, graph: DStreamGraph, hostname: str, port: int) -> None:
        if not isinstance(hostname, str) or not hostname:
            raise ValueError(f"socketTextStream() hostname {hostname!r} must be a non-empty str")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise ValueError(f"socketTextStream() port {port!r} must be an int in 1..65535")
        super().__init__(graph, name="socketTextStream")
        self._hostname, self._port = hostname, port

    _transient: ClassVar[tuple[str, ...]] = (
        "_buffer",
        "_arrivals",
        "_buffer_lock",
        "_stopping",
        "_thread",
        "_sock",
        "_sock_lock",
        "_location",
    )

    def _init_transient(self) -> None:
        super()._init_transient()
        self._buffer: list[str] = []
        # (end, received_ms) per stored chunk, oldest first: the buffer's lines up to index
        # `end` (exclusive) not in an earlier chunk arrived at received_ms.
        self._arrivals: list[tuple[int, int]] = []
        # Guards the buffer; waited on by the receiver (for room) and by tests (for lines).
        self._buffer_lock = threading.Condition()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self._sock_lock = threading.Lock()
        self._location = ""

    @property
    def _address(self) -> str:
        return f"{self._hostname}:{self._port}"

    # ---- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        self._stopping.clear()
        conf = live_conf(self._graph.sc)
        self._location = conf.get("spark.driver.host") or socket.gethostname()
        self._thread = threading.Thread(
            target=self._receive_forever, name=f"dstream-receiver-{self._id}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        with self._buffer_lock:
            self._buffer_lock.notify_all()  # a receiver waiting for room gives up
        with self._sock_lock:
            if self._sock is not None:
                with contextlib.suppress(OSError):
                    self._sock.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=_CONNECT_TIMEOUT_S + 5)
            self._thread = None
            # As Spark's receiver supervisor says when the driver stops it (not an error).
            info = replace(self._info(False), last_error_message="Stopped by driver")
            self._graph.bus.post("onReceiverStopped", StreamingListenerReceiverStopped(info))

    # ---- the receiver thread ----------------------------------------------------------------
    def _receive_forever(self) -> None:
        delay_s = self._graph.settings.receiver_restart_delay.total_seconds()
        decoder = LineDecoder()
        while not self._stopping.is_set():
            message, error = self._receive_once(decoder)
            if self._stopping.is_set():
                break
            log.warning(
                "socketTextStream %s: %s; reconnecting in %.3g s", self._address, message, delay_s
            )
            info = self._info(False, message, error)
            self._graph.bus.post("onReceiverError", StreamingListenerReceiverError(info))
            self._stopping.wait(delay_s)

    def _receive_once(self, decoder: LineDecoder) -> tuple[str, BaseException | None]:
        """Connect and store lines until the connection ends; returns why it ended."""
        decoder.reset()
        try:
            sock = socket.create_connection(
                (self._hostname, self._port), timeout=_CONNECT_TIMEOUT_S
            )
        except OSError as exc:
            return f"Error connecting to {self._address}: {exc}", exc
        try:
            with sock:
                sock.settimeout(None)
                with self._sock_lock:
                    if self._stopping.is_set():
                        return "", None
                    self._sock = sock
                info = self._info(True)
                self._graph.bus.post("onReceiverStarted", StreamingListenerReceiverStarted(info))
                clock = self._graph.clock
                while True:
                    data = sock.recv(_CHUNK_BYTES)
                    received = clock.now().ms
                    if not data:
                        self._store(decoder.finish(), received)
                        return "Socket data stream had no more data", None
                    if not self._store(decoder.feed(data), received):
                        return "", None  # stopping
        except Exception as exc:  # any failure restarts the receiver, as Spark's (NonFatal)
            return f"Error receiving data from {self._address}: {exc}", exc
        finally:
            with self._sock_lock:
                self._sock = None

    def _store(self, lines: list[str], received_ms: int) -> bool:
        """Append ``lines`` (received at ``received_ms``) to the buffer, waiting for room
        while it holds the maximum (the socket is not read meanwhile: TCP backpressure).
        False if the context stops."""
        stored = 0
        while stored < len(lines):
            with self._buffer_lock:
                self._buffer_lock.wait_for(
                    lambda: len(self._buffer) < self._held_limit() or self._stopping.is_set()
                )
                if self._stopping.is_set():
                    return False
                room = self._held_limit() - len(self._buffer)
                self._buffer.extend(lines[stored : stored + room])
                stored += room
                self._arrivals.append((len(self._buffer), received_ms))
                self._buffer_lock.notify_all()
        return True

    def _info(
        self, active: bool, message: str = "", error: BaseException | None = None
    ) -> ReceiverInfo:
        """Spark's ReceiverInfo; an error (or an end of stream) is timed on the streaming
        clock, as Spark's receiver tracker does."""
        return ReceiverInfo(
            stream_id=self._id,
            receiver_name=f"SocketReceiver-{self._id}",
            is_active=active,
            host=self._location,
            last_error_message=message,
            last_error="" if error is None else "".join(traceback.format_exception(error)),
            last_error_time_ms=self._graph.clock.now().ms if message else -1,
        )

    # ---- what the engine and tests call ------------------------------------------------------
    def set_rate_limit(self, rate: float | None) -> None:
        with self._buffer_lock:
            super().set_rate_limit(rate)
            self._buffer_lock.notify_all()  # a higher limit: room again

    def _wait_for_buffered(self, count: int, timeout_s: float) -> bool:
        """Block until ``count`` lines wait for the next interval (for tests and demos)."""
        with self._buffer_lock:
            return self._buffer_lock.wait_for(lambda: len(self._buffer) >= count, timeout_s)

    def description(self) -> str:
        return f"{self._operator}[{self._hostname}:{self._port}]"

    def _read(self, time: Time) -> RDD[Any]:
        """The buffered lines received before ``time``, the interval's end (see the module
        docstring); later ones stay for the next interval."""
        with self._buffer_lock:
            taken = 0
            for end, received_ms in self._arrivals:
                if received_ms >= time.ms:
                    break
                taken = end
            records, self._buffer = self._buffer[:taken], self._buffer[taken:]
            self._arrivals = [(e - taken, r) for e, r in self._arrivals if e > taken]
            self._buffer_lock.notify_all()  # room again: the receiver reads on
        self.set_record_count(time, len(records))
        sc = self._graph.sc
        return sc.parallelize(records) if records else sc.emptyRDD()
