"""Receivers on executors (``createStream(..., placement="executors")``), driver side: a
one-task Spark job per receiver address runs ``io.dstream.shim.receiver.ExecutorReceiver``
(the JVM shim), which listens for clients on its executor, stores each block there and on
another executor through the executor's block manager (``StreamBlockId``), and registers it
with the driver over the tracker connection below before it acknowledges it to the client.
When the receiver's executor dies the job fails; it is submitted again and the receiver
listens on the same port on another executor, where the clients connect again.

The tracker protocol (TCP, big-endian; ``str`` = u16 length | UTF-8)::

    receiver -> driver  "DST1" | token (32 bytes) | u32 index | str executor | str host
                        | u32 port                       (once, after it listens)
    receiver -> driver  "S" | u64 request | client id (16) | u64 seq | u32 records
                        | u16 n | n x str executor       a block stored on those executors
    driver -> receiver  "R" | u64 request | u8 status     0 new, 1 known (a copy: dropped),
                                                          2 committed, 3 refused (stopping)
    driver -> receiver  "C" | client id (16) | u64 seq    committed: tell the client
    receiver -> driver  "E" | u8 kind | str peer | str message   0 a client refused, 1 a
                                                                 connection failed

The token is random per stream start and travels to the executor inside the task (as the
clients' secret does); the driver closes every tracker connection to stop the receivers.
"""

from __future__ import annotations

import contextlib
import hmac
import logging
import os
import socket
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from dstream.jvm import live_conf
from dstream.receiver.protocol import CLIENT_ID_BYTES, recv_exactly

if TYPE_CHECKING:
    from pyspark import SparkContext

__all__ = ["COMMITTED", "KNOWN", "NEW", "REFUSED", "ExecutorReceivers", "RemoteBlock"]

log = logging.getLogger(__name__)

MAGIC: Final = b"DST1"
TOKEN_BYTES: Final = 32
NEW: Final = 0
KNOWN: Final = 1
COMMITTED: Final = 2
REFUSED: Final = 3
RECEIVER_CLASS: Final = "io.dstream.shim.receiver.ExecutorReceiver"
_RESTART_DELAY_S = 1.0


@dataclass(frozen=True)
class RemoteBlock:
    """A block an executor's receiver stored: Spark's ``StreamBlockId(stream, unique)``."""

    client: str  # hex
    seq: int
    count: int
    unique: int
    executors: list[str]


def _read_str(sock: socket.socket) -> str:
    (n,) = struct.unpack(">H", recv_exactly(sock, 2))
    return recv_exactly(sock, n).decode("utf-8", "replace")


class _Tracker:
    """One receiver run's connection to the driver; replies and commits are sent under its
    lock."""

    def __init__(self, sock: socket.socket, index: int, executor: str, address: tuple[str, int]):
        self.sock, self.index, self.executor, self.address = sock, index, executor, address
        self.lock = threading.Lock()

    def send(self, frame: bytes) -> None:
        with self.lock, contextlib.suppress(OSError):
            self.sock.sendall(frame)

    def commit(self, client: str, seq: int) -> None:
        self.send(b"C" + bytes.fromhex(client) + struct.pack(">Q", seq))


class ExecutorReceivers:
    """The receivers of one stream on executors: their jobs, kept running until :meth:`stop`,
    and the tracker server they report to.

    ``register(block, tracker)`` (the stream's) answers each stored block with NEW, KNOWN,
    COMMITTED or REFUSED and may block (backpressure); ``on_error(kind, peer, message)``
    hears of refused clients (kind 0) and failed connections (kind 1); ``on_started(index,
    executor, address)`` of each receiver run listening.
    """

    def __init__(
        self,
        sc: SparkContext,
        *,
        stream_id: int,
        label: str,
        secret: bytes,
        addresses: list[tuple[str, int]],
        replicas: int,
        as_text: bool,
        register: Callable[[RemoteBlock, _Tracker], int],
        on_error: Callable[[int, str, str], None],
        on_started: Callable[[int, str, tuple[str, int]], None],
    ) -> None:
        self._sc = sc
        self._stream_id, self._label = stream_id, label
        self._secret, self._addresses = secret, addresses
        self._replicas, self._as_text = replicas, as_text
        self._register, self._on_error, self._on_started = register, on_error, on_started
        self._token = os.urandom(TOKEN_BYTES)
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._trackers: set[_Tracker] = set()
        self._threads: list[threading.Thread] = []
        self._server: socket.socket | None = None
        self.unfinished: list[str] = []  # threads still running when stop() returned
        self._group = f"dstream-receiver-{stream_id}-{self._token[:4].hex()}"

    def start(self) -> None:
        from dstream.jvm import SHIM_JAR, shim_class

        receiver = shim_class(self._sc, RECEIVER_CLASS)  # ShimMissingError names the fix
        # The executors load the receiver's class from the shim jar (fetched with the task).
        self._sc._jsc.sc().addJar(str(SHIM_JAR))
        conf = live_conf(self._sc)
        host = conf.get("spark.driver.host") or socket.gethostname()
        bind = conf.get("spark.driver.bindAddress") or host
        self._server = socket.create_server((bind, 0))
        self._server.settimeout(0.5)
        tracker = (host, self._server.getsockname()[1])
        self._spawn(f"dstream-receiver-{self._stream_id}-tracker", self._accept_forever)
        for index, (listen_host, port) in enumerate(self._addresses):
            spec = "\n".join(
                f"{k}={v}"
                for k, v in {
                    "secret": self._secret.hex(),
                    "token": self._token.hex(),
                    "trackerHost": tracker[0],
                    "trackerPort": tracker[1],
                    "index": index,
                    "host": listen_host,
                    "port": port,
                    "streamId": self._stream_id,
                    "replicas": self._replicas,
                    "asText": "true" if self._as_text else "false",
                }.items()
            )
            self._spawn(
                f"dstream-receiver-{self._stream_id}-job-{index}",
                self._keep_running,
                receiver,
                index,
                spec,
            )

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            with contextlib.suppress(OSError):
                self._server.close()
        with self._lock:
            trackers = list(self._trackers)
        for tracker in trackers:  # the receivers see the connection close and return
            with contextlib.suppress(OSError):
                tracker.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(Exception):  # a receiver job still waiting for a core
            self._sc._jsc.cancelJobGroup(self._group)
        for thread in self._threads:
            thread.join(timeout=30)
        # What did not end within its 30 s (a registration nobody woke, a job not cancelled).
        self.unfinished = [t.name for t in self._threads if t.is_alive()]
        if self.unfinished:
            log.warning("%s: still running after stop: %s", self._label, self.unfinished)

    def receivers(self) -> dict[int, tuple[str, tuple[str, int]]]:
        """index -> (executor id, (host, port)) of each receiver run now listening."""
        with self._lock:
            return {t.index: (t.executor, t.address) for t in self._trackers}

    # ---- threads ----
    def _spawn(self, name: str, target: Callable[..., None], *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()

    def _keep_running(self, receiver: Any, index: int, spec: str) -> None:
        """Run receiver ``index``'s job, again each time it fails, until stop()."""
        from dstream.jvm import invoke_static

        while not self._stopping.is_set():
            try:
                invoke_static(
                    self._sc,
                    receiver,
                    "run",
                    ("org.apache.spark.api.java.JavaSparkContext", self._sc._jsc),
                    ("java.lang.String", self._group),
                    ("java.lang.String", spec),
                )
            except Exception as exc:
                if self._stopping.is_set():
                    return
                why = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
                message = f"receiver {index} failed ({why}); starting it again"
                log.warning("%s: %s", self._label, message)
                self._on_error(1, "", message)
                self._stopping.wait(_RESTART_DELAY_S)
            else:
                if not self._stopping.is_set():
                    log.warning("%s: receiver %d returned; starting it again", self._label, index)
                    self._stopping.wait(_RESTART_DELAY_S)

    def _accept_forever(self) -> None:
        assert self._server is not None
        while not self._stopping.is_set():
            try:
                sock, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._spawn(f"dstream-receiver-{self._stream_id}-tracker", self._serve, sock)

    def _serve(self, sock: socket.socket) -> None:
        with sock:
            try:
                sock.settimeout(30)
                hello = recv_exactly(sock, len(MAGIC) + TOKEN_BYTES + 4)
                if hello[:4] != MAGIC or not hmac.compare_digest(hello[4:-4], self._token):
                    log.warning("%s: a tracker connection without the token; closed", self._label)
                    return
                (index,) = struct.unpack(">I", hello[-4:])
                executor, host = _read_str(sock), _read_str(sock)
                (port,) = struct.unpack(">I", recv_exactly(sock, 4))
                sock.settimeout(None)
            except (OSError, ConnectionError, struct.error):
                return
            tracker = _Tracker(sock, index, executor, (host, port))
            with self._lock:
                self._trackers.add(tracker)
            try:
                if not self._stopping.is_set():
                    self._on_started(index, executor, (host, port))
                while not self._stopping.is_set():
                    kind = sock.recv(1)
                    if not kind:
                        return
                    if kind == b"S":
                        self._take_block(sock, tracker)
                    elif kind == b"E":
                        (what,) = recv_exactly(sock, 1)
                        peer, message = _read_str(sock), _read_str(sock)
                        self._on_error(what, peer, message)
                    else:
                        log.warning("%s: unknown tracker message %r", self._label, kind)
                        return
            except (OSError, ConnectionError):
                return
            finally:
                with self._lock:
                    self._trackers.discard(tracker)

    def _take_block(self, sock: socket.socket, tracker: _Tracker) -> None:
        head = recv_exactly(sock, 8 + CLIENT_ID_BYTES + 8 + 4 + 2)
        request = struct.unpack_from(">Q", head, 0)[0]
        client = head[8 : 8 + CLIENT_ID_BYTES].hex()
        seq, count, n = struct.unpack_from(">QIH", head, 8 + CLIENT_ID_BYTES)
        executors = [_read_str(sock) for _ in range(n)]
        block = RemoteBlock(client, seq, count, request, sorted(executors, key=_executor_order))
        status = REFUSED if self._stopping.is_set() else self._register(block, tracker)
        tracker.send(b"R" + struct.pack(">QB", request, status))


def _executor_order(executor: str) -> tuple[int, str]:
    return (int(executor), "") if executor.isdigit() else (1 << 30, executor)
