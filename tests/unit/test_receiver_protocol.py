"""The receiver's wire protocol, committed-block ledger and client, without Spark: the
handshake both ways, frames, and the client keeping and resending unacknowledged blocks
to the next receiver when its receiver dies (Sec. 4.3)."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable

import pytest

from dstream.receiver.client import ReceiverClient, ReceiverRefusedError
from dstream.receiver.ledger import CommittedBlocks
from dstream.receiver.protocol import (
    ACK_COMMITTED,
    ACK_STORED,
    HandshakeRefusedError,
    ProtocolError,
    accept_handshake,
    decode_records,
    encode_block,
    offer_handshake,
    read_block,
    send_ack,
)

SECRET = b"unit-test-secret-0123456789"
CLIENT = b"c" * 16


def handshake(server_secret: bytes, client_secret: bytes) -> tuple[object, object]:
    """Run both sides over a socket pair; each side's result or exception."""
    a, b = socket.socketpair()
    results: dict[str, object] = {}

    def server() -> None:
        try:
            results["server"] = accept_handshake(a, server_secret)
        except Exception as exc:
            results["server"] = exc

    thread = threading.Thread(target=server)
    thread.start()
    try:
        offer_handshake(b, client_secret, CLIENT)
        results["client"] = "ok"
    except Exception as exc:
        results["client"] = exc
    thread.join(10)
    a.close()
    b.close()
    return results["server"], results["client"]


def test_the_handshake_admits_a_client_with_the_secret() -> None:
    assert handshake(SECRET, SECRET) == (CLIENT, "ok")


def test_the_handshake_refuses_a_client_with_another_secret_and_says_why() -> None:
    server, client = handshake(SECRET, b"another secret")
    assert isinstance(server, HandshakeRefusedError)
    assert isinstance(client, HandshakeRefusedError)
    assert "does not know the receiver's secret" in str(client)


def test_a_client_refuses_a_server_that_does_not_speak_the_protocol() -> None:
    a, b = socket.socketpair()
    with a, b:
        a.sendall(b"HTTP" + b"\0" * 32)
        with pytest.raises(ProtocolError, match="does not speak"):
            offer_handshake(b, SECRET, CLIENT)


def test_blocks_round_trip_without_pickle() -> None:
    records = [b"", b"a", "é".encode(), bytes(range(256))]
    frame = encode_block(7, records)
    assert decode_records(frame) == (7, records)
    assert frame[:13] == b"B" + struct.pack(">QI", 7, 4)  # the documented layout
    a, b = socket.socketpair()
    with a, b:
        a.sendall(frame)
        assert read_block(b) == (7, records)
        a.close()
        assert read_block(b) is None  # closed between blocks


def test_an_oversized_block_is_refused_before_it_is_read() -> None:
    a, b = socket.socketpair()
    with a, b:
        a.sendall(b"B" + struct.pack(">QI", 1, 1) + struct.pack(">I", 2**31))
        with pytest.raises(ProtocolError, match="larger than"):
            read_block(b)


def test_committed_blocks_keep_a_watermark_and_the_blocks_above_it() -> None:
    ledger = CommittedBlocks()
    for seq in (0, 1, 3, 5):
        ledger.add("c", seq)
    assert [s for s in range(7) if ("c", s) in ledger] == [0, 1, 3, 5]
    assert ledger.to_json() == {"c": [1, [3, 5]]}
    ledger.add("c", 2)
    assert ledger.to_json() == {"c": [3, [5]]}
    again = CommittedBlocks.from_json(ledger.to_json())
    assert ("c", 3) in again and ("c", 4) not in again and ("d", 0) not in again


class FakeReceiver:
    """A receiver without Spark: admits clients with the secret and answers each block
    with ``answer(seq)`` (the acknowledgements to send), then runs ``after`` if given."""

    def __init__(self, answer: Callable[[int], list[bytes]], close_after: int | None = None):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.address = self.server.getsockname()[:2]
        self.answer, self.close_after = answer, close_after
        self.blocks: list[tuple[int, list[bytes]]] = []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        sock, _ = self.server.accept()
        with sock:
            accept_handshake(sock, SECRET)
            while (block := read_block(sock)) is not None:
                self.blocks.append(block)
                for kind in self.answer(block[0]):
                    send_ack(sock, kind, block[0])
                if self.close_after is not None and len(self.blocks) >= self.close_after:
                    return  # the receiver dies

    def close(self) -> None:
        self.server.close()


def test_the_client_resends_uncommitted_blocks_to_the_next_receiver() -> None:
    # The first receiver stores (acks) 3 blocks and dies before any interval commits them.
    first = FakeReceiver(lambda seq: [ACK_STORED], close_after=3)
    second = FakeReceiver(lambda seq: [ACK_STORED, ACK_COMMITTED])
    try:
        with ReceiverClient([first.address, second.address], SECRET, block_records=2) as client:
            for i in range(6):
                client.send(f"r{i}")
            assert client.wait_committed(30)
            assert client.connections == 2
        assert [seq for seq, _ in first.blocks] == [0, 1, 2]
        # Every block not committed went to the second receiver, in order, with its records.
        assert second.blocks == [(0, [b"r0", b"r1"]), (1, [b"r2", b"r3"]), (2, [b"r4", b"r5"])]
    finally:
        first.close()
        second.close()


def test_a_refused_client_reports_it_and_stops() -> None:
    server = socket.create_server(("127.0.0.1", 0))

    def refuse() -> None:
        sock, _ = server.accept()
        with sock, pytest.raises(HandshakeRefusedError):
            accept_handshake(sock, b"the receiver's own secret")

    thread = threading.Thread(target=refuse)
    thread.start()
    with server, ReceiverClient([server.getsockname()[:2]], SECRET) as client:
        client.send("x")
        with pytest.raises(ReceiverRefusedError, match="authentication failed"):
            client.wait_committed(30)
    thread.join(10)


def test_the_client_cuts_blocks_at_block_bytes_and_refuses_a_bigger_record() -> None:
    receiver = FakeReceiver(lambda seq: [ACK_STORED, ACK_COMMITTED])
    try:
        with ReceiverClient([receiver.address], SECRET, block_bytes=10) as client:
            for record in (b"aaaa", b"bbbb", b"cccc", b"dd"):
                client.send(record)
            with pytest.raises(ValueError, match="larger than block_bytes=10"):
                client.send(b"x" * 11)
            assert client.wait_committed(30)
        assert receiver.blocks == [(0, [b"aaaa", b"bbbb"]), (1, [b"cccc", b"dd"])]
    finally:
        receiver.close()


def test_client_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="at least one"):
        ReceiverClient([], SECRET)
    with pytest.raises(ValueError, match="port: int"):
        ReceiverClient([("127.0.0.1", 0)], SECRET)


def test_the_client_library_imports_without_pyspark() -> None:
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = str(Path(__file__).resolve().parents[2])

    code = (
        "import sys; sys.modules['pyspark'] = None\n"
        "from dstream.receiver.client import ReceiverClient\n"
        "import dstream.receiver\n"
        "print('ok')"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=repo,
        env={**os.environ, "PYTHONPATH": repo},
    )
    assert done.stdout.strip() == "ok", done.stderr[-2000:]
