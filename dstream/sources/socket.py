"""``socketTextStream``: lines read from a TCP server by a receiver thread on the driver.

Each interval takes the lines received since the previous one. A plain TCP text protocol has
no acknowledgements, so the sender cannot resend what a crashed driver had received: this
source is as (un)reliable as pyspark.streaming's. Use a file source for input that must
survive a driver failure.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from typing import TYPE_CHECKING, Any, ClassVar

from dstream.sources.base import InputDStream
from dstream.time import Time

if TYPE_CHECKING:
    from pyspark import RDD

    from dstream.context import StreamingContext

__all__ = ["SocketInputDStream"]

log = logging.getLogger(__name__)


class SocketInputDStream(InputDStream):
    _counts_in_tasks = False

    def __init__(self, ssc: StreamingContext, hostname: str, port: int) -> None:
        if not isinstance(hostname, str) or not hostname:
            raise ValueError(f"socketTextStream() hostname {hostname!r} must be a non-empty str")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise ValueError(f"socketTextStream() port {port!r} must be an int in 1..65535")
        super().__init__(ssc, name="socketTextStream")
        self.hostname, self.port = hostname, port

    _transient: ClassVar[tuple[str, ...]] = (
        "_buffer",
        "_buffer_lock",
        "_stopping",
        "_thread",
        "_sock",
        "connected",
    )

    def _init_transient(self) -> None:
        super()._init_transient()
        self._buffer: list[str] = []
        self._buffer_lock = threading.Condition()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self.connected = threading.Event()

    def _start(self) -> None:
        self._stopping.clear()
        self._thread = threading.Thread(
            target=self._receive_forever, name=f"dstream-receiver-{self._id}", daemon=True
        )
        self._thread.start()

    def _stop(self) -> None:
        self._stopping.set()
        sock = self._sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _receive_forever(self) -> None:
        delay = self._ssc._settings.receiver_restart_delay.total_seconds()
        while not self._stopping.is_set():
            try:
                with socket.create_connection((self.hostname, self.port), timeout=10) as sock:
                    sock.settimeout(None)
                    self._sock = sock
                    self.connected.set()
                    with sock.makefile("r", encoding="utf-8", newline="\n") as lines:
                        for line in lines:
                            with self._buffer_lock:
                                self._buffer.append(line.rstrip("\n"))
                                self._buffer_lock.notify_all()
            except OSError as exc:
                if not self._stopping.is_set():
                    log.warning(
                        "socketTextStream %s:%d: %s; reconnecting in %.1f s",
                        self.hostname,
                        self.port,
                        exc,
                        delay,
                    )
            finally:
                self._sock = None
                self.connected.clear()
            self._stopping.wait(delay)

    def _wait_for_buffered(self, count: int, timeout_s: float) -> bool:
        """Block until ``count`` lines wait for the next interval (for tests and demos)."""
        with self._buffer_lock:
            return self._buffer_lock.wait_for(lambda: len(self._buffer) >= count, timeout_s)

    def _description(self) -> str:
        return f"{self._operator}[{self.hostname}:{self.port}]"

    def _read(self, time: Time) -> RDD[Any]:
        with self._buffer_lock:
            records, self._buffer = self._buffer, []
        self._record_count(time, len(records))
        sc = self._ssc.sparkContext
        return sc.parallelize(records) if records else sc.emptyRDD()
