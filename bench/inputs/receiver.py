"""Records per second through the replicated network receiver (``dstream.receiver``).

One process, one ``local-cluster[2,1,1024]`` SparkContext (two executor JVMs, so every
block is stored on both before it is acknowledged), 1 s intervals on the system clock.
Client threads (``dstream.receiver.client.ReceiverClient``, the library a producer uses)
send 100-byte records as fast as the receiver takes them: each client keeps at most
``max_kept_blocks`` blocks unacknowledged, so what the receiver stores per second is what
the clients get to send. The program counts each interval's records; the rate reported is
the mean over the intervals after the first ``--warmup`` while the clients send (blocks
are stored in batches, so intervals alternate between more and fewer), and every record
sent must be counted exactly once when the clients stop (checked). The receiver takes no
new block while ``StreamingSettings.receiver_max_buffered`` records (100,000) wait for the
next interval, and a client holds at most ``max_kept_blocks`` (256) blocks until their
interval completes: both defaults are kept, as a user gets them.

    .venv/bin/python -m bench.inputs.receiver --block-records 100 1000 10000 --clients 1 4
    .venv/bin/python -m bench.inputs.receiver --placement executors
    .venv/bin/python -m bench.inputs.receiver --system pyspark-streaming

``--system pyspark-streaming`` measures the peer on the same cluster: Spark's own receiver,
``pyspark.streaming``'s ``socketTextStream`` (a long-running task on an executor, blocks
stored with two copies, ``MEMORY_AND_DISK_SER_2``) reading the same 100-byte lines from a
TCP server that writes them as fast as they are taken. Its receiver acknowledges nothing
and its records in flight at a failure are lost, so it only bounds what a receiver on
this machine can take; the count is reported, not checked.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # testbed, when run as a script
RESULTS = Path(__file__).resolve().parents[1] / "results"
SECRET = b"receiver-bench-secret-0123456789"
RECORD = "x" * 90  # with an 8-digit number and a space: 100 bytes


def clients_send(
    addresses: list[tuple[str, int]], n: int, block_records: int, stop: threading.Event
) -> tuple[list[int], list[str]]:
    """``n`` client threads sending until ``stop``; then each waits until its blocks are
    committed. Returns the records each sent, and any error."""
    from dstream.receiver.client import ReceiverClient

    sent = [0] * n
    errors: list[str] = []

    def one(i: int) -> None:
        try:
            with ReceiverClient(addresses, SECRET, block_records=block_records) as client:
                for k in itertools.count():
                    if stop.is_set():
                        break
                    client.send(f"{k:08d} {RECORD}")
                    sent[i] += 1
                if not client.wait_committed(120):
                    errors.append(f"client {i}: {client.kept_blocks} blocks not committed")
        except Exception as exc:  # reported, and the run fails
            errors.append(f"client {i}: {exc!r}")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    stop.wait()
    for t in threads:
        t.join(180)
    return sent, errors


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run(
    sc: Any,
    clients: int,
    block_records: int,
    seconds: int,
    warmup: int,
    placement: str,
    max_buffered: int,
) -> dict[str, Any]:
    from dstream import Duration, StreamingContext, StreamingSettings, Time
    from dstream.receiver import createStream, receiverAddresses
    from dstream.receiver.source import ReceiverInputDStream

    settings = StreamingSettings(receiver_max_buffered=max_buffered)
    ssc = StreamingContext(sc, Duration(1000), settings=settings)
    on_executors = placement == "executors"
    port = free_port() if on_executors else 0
    stream = createStream(ssc, SECRET, port, placement=placement)
    assert isinstance(stream, ReceiverInputDStream)
    counts: dict[int, int] = {}

    def output(t: Time, rdd: Any) -> None:
        counts[t.ms] = rdd.count()

    stream.foreachRDD(output)
    ssc.start()
    if on_executors and not stream._node._wait_for_receivers(1, 120):
        raise RuntimeError("the receiver did not start on an executor within 120 s")
    stop = threading.Event()
    result: list[Any] = []
    sender = threading.Thread(
        target=lambda: result.append(
            clients_send(receiverAddresses(stream), clients, block_records, stop)
        )
    )
    began = time.monotonic()
    sender.start()
    try:
        stop.wait(seconds)
        stop.set()
        sender.join(240)
        sent, errors = result[0]
        total = sum(sent)
        deadline, pause = time.monotonic() + 60, threading.Event()
        while sum(counts.values()) < total and time.monotonic() < deadline:
            pause.wait(0.5)  # the last blocks are counted by the next intervals
    finally:
        ssc.stop(stopSparkContext=False)
    per_interval = [counts[t] for t in sorted(counts)]
    steady = per_interval[warmup:seconds]  # while the clients were sending
    return {
        "placement": placement,
        "max_buffered": max_buffered,
        "clients": clients,
        "block_records": block_records,
        "seconds": round(time.monotonic() - began, 1),
        "sent": total,
        "counted": sum(per_interval),
        "errors": errors,
        "records_per_interval": per_interval,
        "records_per_s": statistics.mean(steady) if steady else 0,
    }


def run_peer(sc: Any, seconds: int, warmup: int) -> dict[str, Any]:
    """pyspark.streaming's socketTextStream reading lines as fast as a TCP server sends."""
    import socket

    from pyspark.streaming import StreamingContext as SparkStreamingContext

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    stop = threading.Event()
    written = [0]
    chunk_lines = 1000

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            k = 0
            while not stop.is_set():
                lines = "".join(f"{k + i:08d} {RECORD}\n" for i in range(chunk_lines))
                try:
                    conn.sendall(lines.encode())
                except OSError:
                    return
                k += chunk_lines
                written[0] = k

    writer = threading.Thread(target=serve, daemon=True)
    writer.start()
    ssc = SparkStreamingContext(sc, 1)
    counts: dict[int, int] = {}
    lines = ssc.socketTextStream("127.0.0.1", port)  # MEMORY_AND_DISK_SER_2: two copies
    lines.foreachRDD(lambda t, rdd: counts.__setitem__(int(t.timestamp()), rdd.count()))
    ssc.start()
    stop.wait(seconds)
    ssc.stop(stopSparkContext=False, stopGraceFully=False)
    stop.set()
    server.close()
    per_interval = [counts[t] for t in sorted(counts)]
    steady = per_interval[warmup:seconds]
    return {
        "system": "pyspark-streaming socketTextStream",
        "clients": 1,
        "seconds": seconds,
        "written": written[0],
        "counted": sum(per_interval),
        "records_per_interval": per_interval,
        "records_per_s": statistics.mean(steady) if steady else 0,
    }


def run_dstream(sc: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    print("| clients | records per block | records/s (mean) | sent | counted |")
    print("| --- | --- | --- | --- | --- |")
    for clients in args.clients:
        for block_records in args.block_records:
            r = run(
                sc,
                clients,
                block_records,
                args.seconds,
                args.warmup,
                args.placement,
                args.max_buffered,
            )
            if r["errors"] or r["counted"] != r["sent"]:
                raise RuntimeError(f"records lost or counted twice, or errors: {r}")
            rows.append(r)
            print(
                f"| {clients} | {block_records} | {r['records_per_s']:.0f} | "
                f"{r['sent']} | {r['counted']} |",
                flush=True,
            )
    return rows


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--system", choices=["dstream", "pyspark-streaming"], default="dstream")
    p.add_argument("--clients", type=int, nargs="+", default=[1, 4])
    p.add_argument("--block-records", type=int, nargs="+", default=[100, 1000, 10000])
    p.add_argument("--seconds", type=int, default=20, help="sending time per configuration")
    p.add_argument("--warmup", type=int, default=4, help="intervals left out of the mean")
    p.add_argument("--label", default="", help="name of this run in receiver.json")
    p.add_argument(
        "--max-buffered",
        type=int,
        default=100_000,
        help="StreamingSettings.receiver_max_buffered (records waiting for an interval)",
    )
    p.add_argument(
        "--placement",
        choices=["driver", "executors"],
        default="driver",
        help="dstream's receiver in the driver, or as a task on an executor",
    )
    args = p.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkContext

    from testbed.faults import cluster_conf, wait_for_executors

    conf = cluster_conf("local-cluster[2,1,1024]", "dstream-receiver-bench", 1024, 2)
    if args.system == "pyspark-streaming":
        # Without its rate controller Spark's receiver takes records faster than the
        # intervals process them until the executor runs out of memory (seen: exit 52);
        # the controller starts from an initial rate and adapts it interval by interval.
        conf.set("spark.streaming.backpressure.enabled", "true")
        conf.set("spark.streaming.backpressure.initialRate", "100000")
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    try:
        wait_for_executors(sc, 2)
        if args.system == "dstream":
            rows = run_dstream(sc, args)
        else:
            rows = [run_peer(sc, args.seconds, args.warmup)]
            print(f"pyspark.streaming socketTextStream: {rows[0]['records_per_s']:.0f} records/s")
            print(f"(records per interval: {rows[0]['records_per_interval']})")
    finally:
        sc.stop()
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "receiver.json"
    earlier = json.loads(path.read_text()) if path.exists() else {}
    system = args.system + (f" {args.placement}" if args.system == "dstream" else "")
    earlier[args.label or f"{time.strftime('%Y-%m-%d %H:%M')} {system}"] = rows
    path.write_text(json.dumps(earlier, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
