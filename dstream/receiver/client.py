"""The client library of the dstream receiver: send records to a running streaming program.

Pure Python and the standard library only (no Spark, no dstream engine), so any producer can
import it::

    from dstream.receiver.client import ReceiverClient

    with ReceiverClient([("127.0.0.1", 9999), ("127.0.0.1", 9998)], secret=b"s3cret") as client:
        for line in lines:
            client.send(line)                 # str (sent as UTF-8) or bytes
        client.wait_committed(timeout=60)     # every record is in a completed interval

Records are grouped into numbered blocks (``block_records`` records, or fewer at
:meth:`~ReceiverClient.flush`). The client keeps every block until the receiver says that
the interval holding it has completed (the "C" acknowledgement, see
:mod:`dstream.receiver.protocol`); when its connection fails it connects to the next address
in its list (round robin) and sends every block it still keeps (the paper's Sec. 4.3). The
receiver drops the copies it already has, so a record is delivered once. Blocks are kept in
this process's memory: if the client process dies, the blocks it had not seen committed are
lost with it (keep your own log if they must survive that).

A receiver that refuses the client (a wrong secret) is reported as :class:`ReceiverRefusedError`
from the next call; the client does not retry then.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import socket
import threading
from collections.abc import Sequence
from types import TracebackType

from dstream.receiver.protocol import (
    ACK_COMMITTED,
    CLIENT_ID_BYTES,
    MAX_BLOCK_BYTES,
    HandshakeRefusedError,
    ProtocolError,
    encode_block,
    offer_handshake,
    read_ack,
)

__all__ = ["ReceiverClient", "ReceiverRefusedError"]

log = logging.getLogger(__name__)

Address = tuple[str, int]


class ReceiverRefusedError(ConnectionError):
    """The receiver refused this client (its secret is not the receiver's)."""


def _check_addresses(addresses: Sequence[Address]) -> list[Address]:
    found = list(addresses)
    if not found:
        raise ValueError("ReceiverClient() needs at least one (host, port) address; got none")
    for item in found:
        ok = (
            isinstance(item, tuple)
            and len(item) == 2
            and isinstance(item[0], str)
            and isinstance(item[1], int)
            and 0 < item[1] < 65536
        )
        if not ok:
            raise ValueError(
                f"ReceiverClient() address {item!r} must be a (host: str, port: int in "
                "1..65535) tuple, e.g. ('127.0.0.1', 9999)"
            )
    return found


class ReceiverClient:
    """Sends records to dstream receivers (see the module docstring).

    - ``addresses``: the receivers' ``(host, port)``; the client uses one at a time and moves
      to the next when a connection fails.
    - ``secret``: the receiver's shared secret (bytes, or str taken as UTF-8).
    - ``block_records``: records per block (a block is one acknowledgement and one Spark
      storage block: larger blocks cost less per record, smaller ones wait less). A block
      is also sent early when it would pass ``block_bytes`` (at most the protocol's 64 MiB).
    - ``max_kept_blocks``: :meth:`send` waits while this many blocks are not yet committed
      (backpressure: memory stays bounded when the streaming program falls behind). A
      windowed or stateful program commits a block only once no recomputation can read it
      (its widest window, or three state checkpoint intervals, later; longer while a
      state's checkpoints fail): keep at least blocks per second x that many seconds, or
      ``send`` waits that long.
    """

    def __init__(
        self,
        addresses: Sequence[Address],
        secret: bytes | str,
        *,
        block_records: int = 1000,
        block_bytes: int = 4 * 1024 * 1024,
        max_kept_blocks: int = 256,
        connect_timeout: float = 10.0,
        retry_delay: float = 0.5,
    ) -> None:
        self._addresses = _check_addresses(addresses)
        if isinstance(secret, str):
            secret = secret.encode()
        if not isinstance(secret, bytes) or not secret:
            raise ValueError("ReceiverClient() secret must be non-empty bytes or str")
        for name, value in (("block_records", block_records), ("max_kept_blocks", max_kept_blocks)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"ReceiverClient() {name}={value!r} must be an int >= 1")
        if isinstance(block_bytes, bool) or not isinstance(block_bytes, int):
            raise ValueError(f"ReceiverClient() block_bytes={block_bytes!r} must be an int")
        if not 1 <= block_bytes <= MAX_BLOCK_BYTES:
            raise ValueError(
                f"ReceiverClient() block_bytes={block_bytes} must be in 1..{MAX_BLOCK_BYTES} "
                "(the largest block a receiver takes)"
            )
        self._secret = secret
        self._block_records = block_records
        self._block_bytes = block_bytes
        self._max_kept = max_kept_blocks
        self._connect_timeout = connect_timeout
        self._retry_delay = retry_delay
        self.client_id = os.urandom(CLIENT_ID_BYTES)
        self._cond = threading.Condition()
        self._current: list[bytes] = []
        self._current_bytes = 0
        self._next_seq = 0
        # seq -> the block's frame, until the receiver commits it (insertion = seq order).
        self._kept: dict[int, bytes] = {}
        self._stored: set[int] = set()
        self._error: BaseException | None = None
        self._closed = threading.Event()
        # How many connections were made (a second one means a reconnect or failover).
        self.connections = 0
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread = threading.Thread(
            target=self._run, name="dstream-receiver-client", daemon=True
        )
        self._thread.start()

    # ---- the producer's side ---------------------------------------------------------------
    def send(self, record: bytes | str) -> None:
        """Add one record (str is sent as UTF-8); a full block is sent right away."""
        data = record.encode() if isinstance(record, str) else record
        if not isinstance(data, bytes):
            raise TypeError(
                f"ReceiverClient.send() takes bytes or str, not {type(record).__name__}"
            )
        if len(data) > self._block_bytes:
            raise ValueError(
                f"ReceiverClient.send(): a record of {len(data)} bytes is larger than "
                f"block_bytes={self._block_bytes}; raise block_bytes (at most {MAX_BLOCK_BYTES}) "
                "or split the record"
            )
        if self._current_bytes + len(data) > self._block_bytes:
            self.flush()
        self._current.append(data)
        self._current_bytes += len(data)
        if len(self._current) >= self._block_records:
            self.flush()

    def flush(self) -> None:
        """Send the records added since the last block as a block of their own (waits while
        ``max_kept_blocks`` blocks are not committed)."""
        if not self._current:
            self._raise_if_failed()
            return
        with self._cond:
            self._cond.wait_for(
                lambda: (
                    len(self._kept) < self._max_kept
                    or self._error is not None
                    or self._closed.is_set()
                )
            )
            self._raise_if_failed()
            seq, self._next_seq = self._next_seq, self._next_seq + 1
            self._kept[seq] = encode_block(seq, self._current)
            self._current, self._current_bytes = [], 0
        self._wake()

    def wait_stored(self, timeout: float) -> bool:
        """Flush, then wait until every block is stored on two executors (acknowledged)."""
        self.flush()
        with self._cond:
            done = self._cond.wait_for(
                lambda: self._error is not None or set(self._kept) <= self._stored, timeout
            )
        self._raise_if_failed()
        return bool(done)

    def wait_committed(self, timeout: float) -> bool:
        """Flush, then wait until every block is in a completed interval (nothing kept)."""
        self.flush()
        with self._cond:
            done = self._cond.wait_for(lambda: self._error is not None or not self._kept, timeout)
        self._raise_if_failed()
        return bool(done)

    @property
    def kept_blocks(self) -> int:
        """Blocks not yet committed by the receiver."""
        with self._cond:
            return len(self._kept)

    @property
    def sent_blocks(self) -> int:
        """Blocks made so far (numbered 0 .. sent_blocks - 1)."""
        return self._next_seq

    def close(self) -> None:
        """Stop; blocks not yet committed are dropped (call wait_committed first)."""
        self._closed.set()
        self._wake()
        self._thread.join(timeout=self._connect_timeout + 5)
        with self._cond:
            if self._kept:
                log.warning("receiver client closed with %d blocks not committed", len(self._kept))
            self._cond.notify_all()
        self._wake_r.close()
        self._wake_w.close()

    def __enter__(self) -> ReceiverClient:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise self._error
        if self._closed.is_set():
            raise RuntimeError("this ReceiverClient is closed; make a new one")

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    # ---- the connection thread ---------------------------------------------------------------
    def _run(self) -> None:
        index = 0
        while not self._closed.is_set():
            host, port = self._addresses[index % len(self._addresses)]
            try:
                sock = socket.create_connection((host, port), timeout=self._connect_timeout)
            except OSError as exc:
                log.info(
                    "receiver %s:%d unreachable (%s); trying the next address", host, port, exc
                )
                index += 1
                self._closed.wait(self._retry_delay)
                continue
            with sock:
                try:
                    offer_handshake(sock, self._secret, self.client_id)
                    sock.settimeout(None)
                    with self._cond:
                        self.connections += 1
                        # Blocks sent on an earlier connection were maybe not stored: all again.
                        self._stored.clear()
                    self._serve(sock)
                except HandshakeRefusedError as exc:
                    with self._cond:
                        self._error = ReceiverRefusedError(f"receiver {host}:{port} refused: {exc}")
                        self._cond.notify_all()
                    return
                except (OSError, ProtocolError) as exc:
                    if self._closed.is_set():
                        return
                    log.warning(
                        "connection to receiver %s:%d failed (%s); sending the %d kept blocks "
                        "to the next address",
                        host,
                        port,
                        exc,
                        self.kept_blocks,
                    )
            index += 1
            self._closed.wait(self._retry_delay)

    def _serve(self, sock: socket.socket) -> None:
        """Send kept blocks not yet sent on this connection; take acknowledgements. Returns
        when the client closes; raises when the connection fails."""
        sent: set[int] = set()
        while not self._closed.is_set():
            with self._cond:
                todo = [(seq, frame) for seq, frame in self._kept.items() if seq not in sent]
            for seq, frame in todo:
                sock.sendall(frame)
                sent.add(seq)
            ready, _, _ = select.select([sock, self._wake_r], [], [], 1.0)
            if self._wake_r in ready:
                with contextlib.suppress(OSError):
                    self._wake_r.recv(4096)
            if sock in ready:
                self._take_ack(sock)

    def _take_ack(self, sock: socket.socket) -> None:
        kind, seq = read_ack(sock)
        with self._cond:
            if kind == ACK_COMMITTED:
                self._kept.pop(seq, None)
                self._stored.discard(seq)
            elif seq in self._kept:
                self._stored.add(seq)
            self._cond.notify_all()
