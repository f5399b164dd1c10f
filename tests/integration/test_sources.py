"""Input sources: directories of files, sockets and the rate source (queues are exercised by
every operator test)."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path
from typing import Any

import pytest

from dstream import StreamingListener, Time
from dstream.scheduler.engine import engine_of
from dstream.sources.textgen import generate_lines

from .conftest import Harness

T0 = 1_700_000_000_000  # a realistic epoch, so file times and batch times share one scale


def put_file(directory: Path, name: str, lines: list[str], mtime_ms: int) -> Path:
    """Write under a hidden name, set the modification time, rename into place."""
    hidden = directory / f".{name}.tmp"
    hidden.write_text("".join(line + "\n" for line in lines))
    os.utime(hidden, ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    final = directory / name
    os.rename(hidden, final)
    return final


class Records(StreamingListener):
    def __init__(self) -> None:
        self.counts: list[int] = []
        self.inputs: list[list[tuple[int, int, list[str], str | None]]] = []

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        info = batchCompleted.batchInfo()
        self.counts.append(info.numRecords())
        self.inputs.append(
            [
                (sid, i.numRecords(), i.metadata().get("files"), i.metadataDescription())
                for sid, i in info.streamIdToInputInfo().items()
            ]
        )


def collect(stream: Any) -> list[list[Any]]:
    out: list[list[Any]] = []
    stream.foreachRDD(lambda rdd: out.append(sorted(rdd.collect())))
    return out


def test_text_file_stream_takes_each_new_file_once(harness: Any, tmp_path: Path) -> None:
    h: Harness = harness(start_ms=T0)
    put_file(tmp_path, "old.txt", ["before start"], T0 - 5000)  # present at start: ignored
    lines = h.ssc.textFileStream(str(tmp_path))
    out = collect(lines)
    records = Records()
    h.ssc.addStreamingListener(records)
    h.ssc.start()
    put_file(tmp_path, "a.txt", ["a1", "a2"], T0 + 100)
    put_file(tmp_path, "b.txt", ["b1"], T0 + 900)
    h.run_batches(1)
    put_file(tmp_path, "c.txt", ["c1"], T0 + 1500)
    (tmp_path / ".hidden").write_text("in progress\n")
    (tmp_path / "_SUCCESS").write_text("")
    h.run_batches(1)
    h.run_batches(1)  # nothing new
    # A file renamed in late, with an old modification time, still lands once.
    put_file(tmp_path, "late.txt", ["late"], T0 + 1200)
    h.run_batches(1)
    engine_of(h.ssc).bus.wait_until_empty(30)
    assert out == [["a1", "a2", "b1"], ["c1"], [], ["late"]]
    assert records.counts == [3, 1, 0, 1]
    source = engine_of(h.ssc).graph.inputs[0]
    a, b, c = (str(tmp_path / n) for n in ("a.txt", "b.txt", "c.txt"))
    assert records.inputs[:3] == [  # as Spark's StreamInputInfo: count, files, description
        [(source.id, 3, [a, b], f"{a}\n{b}")],
        [(source.id, 1, [c], c)],
        [(source.id, 0, [], "")],
    ]
    assert [os.path.basename(p) for p in source._batch_files[Time(T0 + 1000)]] == ["a.txt", "b.txt"]


def test_file_stream_with_filter_and_existing_files(harness: Any, tmp_path: Path) -> None:
    h: Harness = harness(start_ms=T0)
    put_file(tmp_path, "old.csv", ["old"], T0 - 5000)
    put_file(tmp_path, "skip.log", ["skip"], T0 - 4000)
    out = collect(h.ssc.fileStream(str(tmp_path), lambda p: p.endswith(".csv"), newFilesOnly=False))
    h.ssc.start()
    h.run_batches(1)
    assert out == [["old"]]


def test_binary_records_stream(harness: Any, tmp_path: Path) -> None:
    h: Harness = harness(start_ms=T0)
    out = collect(h.ssc.binaryRecordsStream(str(tmp_path), 4))
    h.ssc.start()
    hidden = tmp_path / ".r.bin"
    hidden.write_bytes(b"aaaabbbbcccc")
    os.utime(hidden, ns=((T0 + 10) * 1_000_000,) * 2)
    os.rename(hidden, tmp_path / "r.bin")
    h.run_batches(1)
    assert out == [[b"aaaa", b"bbbb", b"cccc"]]


def test_a_missing_directory_is_reported_at_start(harness: Any, tmp_path: Path) -> None:
    h: Harness = harness()
    h.ssc.textFileStream(str(tmp_path / "nope")).pprint()
    with pytest.raises(
        ValueError, match=r"textFileStream\(\) directory .*nope does not exist.*create it"
    ):
        h.ssc.start()


def test_socket_text_stream_reads_lines_from_a_server(harness: Any) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    conns: list[socket.socket] = []
    accepted = threading.Event()

    def serve() -> None:
        conn, _ = server.accept()
        conns.append(conn)
        accepted.set()

    threading.Thread(target=serve, daemon=True).start()
    h: Harness = harness()
    stream = h.ssc.socketTextStream("127.0.0.1", port)
    out = collect(stream.map(str.upper))
    h.ssc.start()
    try:
        assert accepted.wait(30)
        conns[0].sendall(b"hello\nworld\n")
        source = engine_of(h.ssc).graph.inputs[0]
        assert source._wait_for_buffered(2, 30)
        h.run_batches(1)
        conns[0].sendall("ünïcode\n".encode())
        assert source._wait_for_buffered(1, 30)
        h.run_batches(1)
        h.run_batches(1)
        assert out == [["HELLO", "WORLD"], ["ÜNÏCODE"], []]
    finally:
        for c in conns:
            c.close()
        server.close()


def test_socket_arguments_are_validated(harness: Any) -> None:
    ssc = harness().ssc
    with pytest.raises(ValueError, match=r"port 70000 must be an int in 1..65535"):
        ssc.socketTextStream("localhost", 70000)


def test_rate_stream_is_deterministic_and_exact(harness: Any) -> None:
    outputs = []
    for _ in range(2):
        h: Harness = harness(batch_ms=500)
        stream = h.ssc.rateStream(300, numPartitions=3, seed=42)
        records = Records()
        h.ssc.addStreamingListener(records)
        out = collect(stream)
        h.ssc.start()
        h.run_batches(4)
        engine_of(h.ssc).bus.wait_until_empty(30)
        h.ssc.stop(stopSparkContext=False)
        outputs.append(out)
        assert [len(b) for b in out] == [150, 150, 150, 150]
        assert records.counts == [150, 150, 150, 150]
        assert all(len(line) == 100 for b in out for line in b)
    assert outputs[0] == outputs[1]
    assert outputs[0][0] != outputs[0][1]
    # Partition p of interval t is generate_lines(hash((seed, t, p)), ...): reproducible anywhere.
    assert set(generate_lines(hash((42, 500, 0)), 50, 100)) <= set(outputs[0][0])


def test_generated_sources_reuse_python_workers(harness: Any) -> None:
    # A source whose partitions are generated on the executors (rate, Kafka) must let
    # PySpark hand each Python worker back to its pool: a new worker per task meant a new
    # process importing the engine every interval (most of a light interval's time).
    h: Harness = harness(batch_ms=500)
    pids: list[int] = []
    h.ssc.rateStream(200, numPartitions=2).foreachRDD(
        lambda rdd: pids.extend(
            rdd.mapPartitions(lambda it: [os.getpid() + 0 * len(list(it))]).collect()
        )
    )
    h.ssc.start()
    h.run_batches(8)
    h.ssc.stop(stopSparkContext=False)
    assert len(pids) == 16
    assert len(set(pids)) <= 4, f"{len(set(pids))} Python worker processes for 16 tasks"


def test_rate_stream_arguments_are_validated(harness: Any) -> None:
    ssc = harness().ssc
    with pytest.raises(ValueError, match=r"recordsPerSecond -5 must be >= 0"):
        ssc.rateStream(-5)
    with pytest.raises(TypeError, match=r"recordsPerSecond must be an int, got 1.5"):
        ssc.rateStream(1.5)
