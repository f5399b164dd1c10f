"""The receiver's wire protocol: a shared-secret handshake, then numbered blocks of
length-prefixed records one way and acknowledgements the other. No pickle on the wire; pure
Python, no Spark (the client library imports it alone).

All integers are big-endian. ``H(x)`` is HMAC-SHA256 keyed with the shared secret::

    receiver -> client  "DSR1" | challenge_r (32 random bytes)
    client -> receiver  H("dstream-receiver/1 client" | challenge_r | challenge_c | client_id)
                        | challenge_c (32 random bytes) | client_id (16 bytes)
    receiver -> client  0x01 | H("dstream-receiver/1 server" | challenge_c | challenge_r
                                 | client_id)
                   or   0x00 | u16 length | reason (UTF-8), and the connection is closed

Both sides prove that they know the secret without sending it, and the fresh challenges make a
recorded handshake useless to replay. The handshake authenticates; it does not encrypt (the
receiver listens on loopback unless told otherwise: use an SSH tunnel or a private network
to reach it from elsewhere). Then::

    client -> receiver  "B" | u64 seq | u32 n | n x (u32 length | record bytes)
    receiver -> client  "A" | u64 seq    block seq is stored on two executors
    receiver -> client  "C" | u64 seq    the interval holding block seq has completed:
                                         the client may forget it

A client numbers its blocks 0, 1, 2... and keeps each one until its "C"; after a failure it
connects again (to the next address it knows) and sends every block it still keeps, and the
receiver recognises blocks it already has by ``(client_id, seq)``.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import socket
import struct
from collections.abc import Callable, Sequence
from typing import Final

__all__ = [
    "ACK_COMMITTED",
    "ACK_STORED",
    "HandshakeRefusedError",
    "ProtocolError",
    "accept_handshake",
    "decode_records",
    "encode_block",
    "offer_handshake",
    "read_ack",
    "read_block",
    "recv_exactly",
    "send_ack",
]

MAGIC: Final = b"DSR1"
CHALLENGE_BYTES: Final = 32
CLIENT_ID_BYTES: Final = 16
MAC_BYTES: Final = 32
BLOCK: Final = b"B"
ACK_STORED: Final = b"A"
ACK_COMMITTED: Final = b"C"
# A block larger than this is refused (a corrupt or hostile length field must not make the
# receiver allocate gigabytes).
MAX_BLOCK_BYTES: Final = 64 * 1024 * 1024
MAX_RECORDS: Final = 10_000_000
_CLIENT_LABEL: Final = b"dstream-receiver/1 client"
_SERVER_LABEL: Final = b"dstream-receiver/1 server"


class ProtocolError(Exception):
    """The peer broke the protocol (bad magic, oversized block, unknown frame)."""


class HandshakeRefusedError(Exception):
    """The receiver refused the client (wrong secret), or the client the receiver."""


def _mac(secret: bytes, *parts: bytes) -> bytes:
    return hmac.new(secret, b"".join(parts), hashlib.sha256).digest()


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    """``n`` bytes from ``sock``; ConnectionError if it closes first."""
    chunks: list[bytes] = []
    left = n
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError(f"connection closed with {left} of {n} bytes still expected")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


# ---- the handshake ---------------------------------------------------------------------------
def accept_handshake(
    sock: socket.socket, secret: bytes, on_refusal: Callable[[str], None] | None = None
) -> bytes:
    """The receiver's side: challenge the client and check its answer. Returns the client's
    id; if the answer is wrong, calls ``on_refusal(why)`` (the receiver's record of it),
    tells the client, and raises HandshakeRefusedError."""
    challenge_r = os.urandom(CHALLENGE_BYTES)
    sock.sendall(MAGIC + challenge_r)
    answer = recv_exactly(sock, MAC_BYTES + CHALLENGE_BYTES + CLIENT_ID_BYTES)
    mac = answer[:MAC_BYTES]
    challenge_c = answer[MAC_BYTES : MAC_BYTES + CHALLENGE_BYTES]
    client_id = answer[MAC_BYTES + CHALLENGE_BYTES :]
    expected = _mac(secret, _CLIENT_LABEL, challenge_r, challenge_c, client_id)
    if not hmac.compare_digest(mac, expected):
        why = f"client {client_id.hex()} answered the challenge with a wrong HMAC (another secret)"
        if on_refusal is not None:
            on_refusal(why)
        reason = b"authentication failed: the client does not know the receiver's secret"
        sock.sendall(b"\x00" + struct.pack(">H", len(reason)) + reason)
        raise HandshakeRefusedError(why)
    sock.sendall(b"\x01" + _mac(secret, _SERVER_LABEL, challenge_c, challenge_r, client_id))
    return client_id


def offer_handshake(sock: socket.socket, secret: bytes, client_id: bytes) -> None:
    """The client's side: answer the receiver's challenge and check that the receiver knows
    the secret too. Raises HandshakeRefusedError (with the receiver's reason) or ProtocolError."""
    hello = recv_exactly(sock, len(MAGIC) + CHALLENGE_BYTES)
    if hello[: len(MAGIC)] != MAGIC:
        raise ProtocolError(
            f"the server does not speak the dstream receiver protocol (it sent {hello[:4]!r}, "
            f"not {MAGIC!r}); check the address"
        )
    challenge_r = hello[len(MAGIC) :]
    challenge_c = os.urandom(CHALLENGE_BYTES)
    mac = _mac(secret, _CLIENT_LABEL, challenge_r, challenge_c, client_id)
    sock.sendall(mac + challenge_c + client_id)
    status = recv_exactly(sock, 1)
    if status == b"\x00":
        (n,) = struct.unpack(">H", recv_exactly(sock, 2))
        raise HandshakeRefusedError(recv_exactly(sock, n).decode("utf-8", "replace"))
    if status != b"\x01":
        raise ProtocolError(f"unexpected handshake status {status!r}")
    proof = recv_exactly(sock, MAC_BYTES)
    if not hmac.compare_digest(
        proof, _mac(secret, _SERVER_LABEL, challenge_c, challenge_r, client_id)
    ):
        raise HandshakeRefusedError(
            "the receiver could not prove it knows the secret (wrong HMAC): not the expected "
            "receiver, or a different secret"
        )


# ---- blocks and acknowledgements ---------------------------------------------------------------
def encode_block(seq: int, records: Sequence[bytes]) -> bytes:
    """The frame of block ``seq``."""
    parts = [BLOCK, struct.pack(">QI", seq, len(records))]
    for record in records:
        parts.append(struct.pack(">I", len(record)))
        parts.append(record)
    return b"".join(parts)


def read_block(sock: socket.socket) -> tuple[int, list[bytes]] | None:
    """The next block from a client: ``(seq, records)``; None when the client closed the
    connection cleanly between blocks."""
    kind = sock.recv(1)
    if not kind:
        return None
    if kind != BLOCK:
        raise ProtocolError(f"expected a block frame 'B', got {kind!r}")
    seq, n = struct.unpack(">QI", recv_exactly(sock, 12))
    if n > MAX_RECORDS:
        raise ProtocolError(f"block {seq} announces {n} records, more than {MAX_RECORDS}")
    records: list[bytes] = []
    total = 0
    for _ in range(n):
        (size,) = struct.unpack(">I", recv_exactly(sock, 4))
        total += size
        if total > MAX_BLOCK_BYTES:
            raise ProtocolError(
                f"block {seq} is larger than {MAX_BLOCK_BYTES} bytes; send smaller blocks"
            )
        records.append(recv_exactly(sock, size))
    return seq, records


def decode_records(frame: bytes) -> tuple[int, list[bytes]]:
    """A block frame (as :func:`encode_block` made it) back to ``(seq, records)``."""
    if frame[:1] != BLOCK:
        raise ProtocolError(f"expected a block frame 'B', got {frame[:1]!r}")
    seq, n = struct.unpack_from(">QI", frame, 1)
    pos, records = 13, []
    for _ in range(n):
        (size,) = struct.unpack_from(">I", frame, pos)
        records.append(frame[pos + 4 : pos + 4 + size])
        pos += 4 + size
    if pos != len(frame):
        raise ProtocolError(f"block {seq}: {len(frame) - pos} bytes after its last record")
    return seq, records


def send_ack(sock: socket.socket, kind: bytes, seq: int) -> None:
    sock.sendall(kind + struct.pack(">Q", seq))


def read_ack(sock: socket.socket) -> tuple[bytes, int]:
    """The next acknowledgement from the receiver: ``(ACK_STORED or ACK_COMMITTED, seq)``."""
    frame = recv_exactly(sock, 9)
    kind = frame[:1]
    if kind not in (ACK_STORED, ACK_COMMITTED):
        raise ProtocolError(f"expected an acknowledgement 'A' or 'C', got {kind!r}")
    (seq,) = struct.unpack(">Q", frame[1:])
    return kind, seq
