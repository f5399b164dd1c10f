"""The receivers of ``placement="driver"``: one listening thread per address, one thread per
connection. Each connection passes the HMAC handshake, then reads blocks, stores the new
ones on executors in one job per batch (:func:`dstream.receiver.blocks.store_blocks`, through
the stream's ``store``), registers them (:class:`~dstream.receiver.registry.BlockRegistry`)
and acknowledges each; a block sent again after a failure is acknowledged without being
stored twice. While an interval's worth of records waits, a connection is not read
(backpressure: TCP slows the client down)."""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import threading
from collections.abc import Callable
from typing import Any

from dstream.receiver.blocks import StoredBlock
from dstream.receiver.protocol import (
    ACK_COMMITTED,
    ACK_STORED,
    HandshakeRefusedError,
    ProtocolError,
    accept_handshake,
    read_block,
    send_ack,
)
from dstream.receiver.registry import BlockRegistry

__all__ = ["HANDSHAKE_TIMEOUT_S", "DriverReceivers"]

log = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT_S = 10.0
# Blocks of one connection stored in one job at most: those already received when the
# previous store finished (a client keeps sending while its blocks are stored).
_BATCH_BLOCKS = 64

Store = Callable[[list[tuple[str, int, list[Any]]]], list[StoredBlock]]


def _readable(sock: socket.socket) -> bool:
    """Whether more of the client's data has already arrived (without waiting)."""
    ready, _, _ = select.select([sock], [], [], 0)
    return bool(ready)


class _Connection:
    """One authenticated client connection; acknowledgements are sent under its lock."""

    def __init__(self, sock: socket.socket, client: str, listener: int) -> None:
        self.sock, self.client, self.listener = sock, client, listener
        self.lock = threading.Lock()

    def ack(self, kind: bytes, seq: int) -> None:
        with self.lock, contextlib.suppress(OSError):
            send_ack(self.sock, kind, seq)


class DriverReceivers:
    """The listening addresses of one receiver stream and their connections (see the module
    docstring). ``on_refused(peer, reason, exc)`` and ``on_error(message, exc)`` report to
    the stream's listeners."""

    def __init__(
        self,
        label: str,
        thread_name: str,
        secret: bytes,
        as_text: bool,
        registry: BlockRegistry,
        store: Store,
        stopping: threading.Event,
        on_refused: Callable[[str, str, BaseException | None], None],
        on_error: Callable[[str, BaseException], None],
    ) -> None:
        self._label, self._thread_name = label, thread_name
        self._secret, self._as_text = secret, as_text
        self._registry, self._store, self._stopping = registry, store, stopping
        self._on_refused, self._on_error = on_refused, on_error
        self._store_lock = threading.Lock()  # one batch of blocks stored at a time
        self._lock = threading.Lock()  # guards the lists below
        self._servers: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self._live: set[socket.socket] = set()  # every open connection (closed at stop)
        self.bound: list[tuple[str, int]] = []

    def start(self, addresses: list[tuple[str, int]]) -> None:
        """Listen on every address (``port`` 0: any free one; ``bound`` says which)."""
        for index, (host, port) in enumerate(addresses):
            try:
                server = socket.create_server((host, port))
            except OSError as exc:
                self.stop()  # the addresses bound so far
                raise OSError(
                    exc.errno,
                    f"{self._label} cannot listen on {host}:{port} ({exc.strerror}); another "
                    "program (or stream) holds that port: pick another one, or port=0 for any "
                    "free one",
                ) from exc
            server.settimeout(0.5)
            self._servers.append(server)
            self.bound.append(server.getsockname()[:2])
            self._spawn(self._accept_forever, server, index)

    def stop(self) -> None:
        """Close the addresses and every connection, and wait for their threads (the stream
        set ``stopping`` first)."""
        for server in self._servers:
            with contextlib.suppress(OSError):
                server.close()
        with self._lock:
            live = list(self._live)
        for sock in live:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout=HANDSHAKE_TIMEOUT_S + 5)

    def kill_listener(self, index: int) -> None:
        """Close listening address ``index`` and its connections, as if that receiver died
        (for tests: its clients fail over to the next address)."""
        with contextlib.suppress(OSError):
            self._servers[index].close()
        with self._registry.lock:
            doomed = [
                c
                for c in self._registry.connections.values()
                if isinstance(c, _Connection) and c.listener == index
            ]
        for conn in doomed:  # (a client's older connections through it have failed already)
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)

    def _spawn(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=self._thread_name, daemon=True)
        with self._lock:  # accept threads of several addresses spawn at once
            self._threads = [t for t in self._threads if t.is_alive()]
            self._threads.append(thread)
        thread.start()

    # ---- the listening and connection threads ----------------------------------------------
    def _accept_forever(self, server: socket.socket, index: int) -> None:
        while not self._stopping.is_set():
            try:
                sock, peer = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed by stop()
            self._spawn(self._serve, sock, f"{peer[0]}:{peer[1]}", index)

    def _serve(self, sock: socket.socket, peer: str, listener: int) -> None:
        with self._lock:
            self._live.add(sock)
        try:
            self._serve_connection(sock, peer, listener)
        finally:
            with self._lock:
                self._live.discard(sock)

    def _serve_connection(self, sock: socket.socket, peer: str, listener: int) -> None:
        registry = self._registry
        with sock:
            try:
                sock.settimeout(HANDSHAKE_TIMEOUT_S)
                client = accept_handshake(
                    sock, self._secret, lambda why: self._on_refused(peer, why, None)
                ).hex()
                sock.settimeout(None)
            except HandshakeRefusedError:
                return  # recorded and reported by on_refused before the client was told
            except (OSError, ProtocolError) as exc:
                self._on_refused(peer, f"handshake failed: {exc}", exc)
                return
            conn = _Connection(sock, client, listener)
            with registry.lock:
                registry.connections[client] = conn
            try:
                while not self._stopping.is_set():
                    block = read_block(sock)
                    if block is None:
                        return
                    # The blocks that already arrived go with it, as far as there is room.
                    room = registry.wait_for_room((client, block[0]))
                    batch, records = [block], len(block[1])
                    while len(batch) < _BATCH_BLOCKS and records < room and _readable(sock):
                        block = read_block(sock)
                        if block is None:
                            break
                        batch.append(block)
                        records += len(block[1])
                    self._take_blocks(conn, batch)
                    if block is None:
                        return
            except Exception as exc:  # the connection fails; the client sends again
                if not self._stopping.is_set():
                    message = f"connection from client {client} at {peer} failed: {exc}"
                    log.warning("%s: %s", self._label, message)
                    self._on_error(message, exc)
            finally:
                with registry.lock:
                    if registry.connections.get(client) is conn:
                        del registry.connections[client]

    def _take_blocks(self, conn: _Connection, blocks: list[tuple[int, list[bytes]]]) -> None:
        """Store a connection's blocks (in arrival order) that are not stored yet, in one
        job, then acknowledge each; blocks sent again after a failure are acknowledged
        without storing them twice."""
        registry = self._registry
        stored: list[StoredBlock] = []
        with self._store_lock:
            new: list[tuple[str, int, list[Any]]] = []
            again: list[tuple[int, bool]] = []
            with registry.lock:
                for seq, raw in blocks:
                    seen = registry.seen((conn.client, seq))
                    if seen is not None:
                        again.append((seq, seen == "committed"))
                    else:  # (a client sends a block once per connection)
                        records: list[Any] = (
                            [r.decode("utf-8", "replace") for r in raw] if self._as_text else raw
                        )
                        new.append((conn.client, seq, records))
            for seq, committed in again:  # sent again after a failure: drop the copy
                conn.ack(ACK_STORED, seq)
                if committed:
                    conn.ack(ACK_COMMITTED, seq)
            if new:
                stored = self._store(new)
                with registry.lock:
                    for block in stored:
                        registry.add_stored(block)
        for block in stored:
            conn.ack(ACK_STORED, block.seq)
