"""Executor loss under a receiver stream, for real: one process, one ``local-cluster``
SparkContext (separate executor JVMs), a client sending numbered records throughout, and
the executor JVM holding one copy of a stored block killed with SIGKILL before the
interval that reads the block runs. Prints one JSON object per run.

    python -m testbed.receiver_faults --kill first --kill second

``--kill first`` kills the first (by executor id) of the two executors holding the
first block waiting for interval ``--at``; ``second`` the other one. Which of the two copies
Spark wrote first (the "receiver's" block) and which it replicated is not known from the
block manager master, so the two runs together kill each of them once. The interval then
has to read that block from the copy left. tests/cluster/test_receiver_faults.py checks
that every record the client sent is in exactly one interval's output (against the
client's own log). The clock is a ManualClock advanced interval by interval; the client
sends in real time, also while the executor dies.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from typing import Any

B = 1000  # ms per interval
SECRET = b"receiver-faults-secret-0123456789"


def send(
    address: list[tuple[str, int]],
    count: int,
    pace_s: float,
    release: threading.Event,
    sent: list[str],
    failed: list[str],
) -> None:
    """``count`` numbered records, one every ``pace_s``, in blocks of 10; then wait until
    every block is committed (the main loop keeps intervals coming). After the first
    quarter it holds until ``release`` is set (the main loop sets it just before the
    kill): the rest is sent while the executor dies, however fast the intervals before it
    ran — unheld, a client that had sent everything before the kill's interval left no
    block for the kill to hit."""
    from dstream.receiver.client import ReceiverClient

    pause = threading.Event()
    try:
        with ReceiverClient(address, SECRET, block_records=10) as client:
            for i in range(count):
                if i == count // 4:
                    release.wait()
                pause.wait(pace_s)
                client.send(f"s{i}")
                sent.append(f"s{i}")
            if not client.wait_committed(300):
                failed.append(f"{client.kept_blocks} blocks not committed in 300 s")
    except Exception as exc:
        failed.append(repr(exc))


def intrude(address: list[tuple[str, int]], outcome: list[str]) -> None:
    """A client with the wrong secret: it must be refused, and its record never output."""
    from dstream.receiver.client import ReceiverClient, ReceiverRefusedError

    with ReceiverClient(address, b"not the receiver's secret") as intruder:
        intruder.send("intruder")
        try:
            intruder.wait_committed(120)
            outcome.append("admitted")
        except ReceiverRefusedError as exc:
            outcome.append(f"refused: {exc}")


def run(sc: Any, args: argparse.Namespace, which: str) -> dict[str, Any]:
    from dstream import Duration, ManualClock, StreamingContext, Time
    from dstream.receiver import createStream, receiverAddresses
    from dstream.receiver.source import ReceiverInputDStream
    from testbed.processes import executor_pids_of

    clock = ManualClock(0)
    ssc = StreamingContext(sc, Duration(B), clock=clock)
    on_executors = args.placement == "executors"
    stream = createStream(
        ssc, SECRET, port=free_port() if on_executors else 0, placement=args.placement
    )
    node = stream._node
    assert isinstance(node, ReceiverInputDStream)  # its internals tell which block is where
    values: dict[int, list[str]] = {}
    blocks: dict[int, list[int]] = {}  # interval -> the seqs of the blocks it read

    def output(t: Time, rdd: Any) -> None:
        values[t.ms] = rdd.collect()
        blocks[t.ms] = [b["seq"] for b in node.input_metadata(t)["blocks"]]

    stream.foreachRDD(output)
    killed: list[str] = []
    victim_block: list[Any] = []
    ssc.start()
    receivers_before: dict[int, Any] = {}
    if on_executors:  # clients connect once the receiver listens on its executor
        if not node._wait_for_receivers(1, 120):
            raise RuntimeError("the receiver did not start on an executor within 120 s")
        receivers_before = node.receivers()
    sent, failed = list[str](), list[str]()
    release = threading.Event()  # the client's second part, sent from just before the kill
    if which == "none":
        release.set()
    client = threading.Thread(
        target=send,
        args=(receiverAddresses(stream), args.records, args.pace_ms / 1000, release, sent, failed),
    )
    client.start()
    intrusion: list[str] = []
    intruder = threading.Thread(target=intrude, args=(receiverAddresses(stream), intrusion))
    intruder.start()
    try:
        interval = 0
        pause = threading.Event()

        def advance() -> None:
            nonlocal interval
            interval += 1
            clock.advance(B)
            began = time.monotonic()
            if not ssc.wait_for_batch(Time(interval * B), 300):
                raise RuntimeError(f"interval {interval} did not complete")
            print(
                f"{which} interval {interval}: {len(values.get(interval * B, []))} records, "
                f"{time.monotonic() - began:.1f} s, killed {killed}",
                file=sys.stderr,
                flush=True,
            )

        for _ in range(args.intervals):
            pause.wait(0.3)  # records arrive between intervals (real time)
            if interval + 1 == args.at and which != "none":
                release.set()
                if not node._wait_for_pending(1, 120):
                    raise RuntimeError(
                        "no block arrived before the kill in 120 s: "
                        + json.dumps(
                            {
                                "sent": len(sent),
                                "client_errors": failed,
                                "stored_blocks": len(node._blocks.known),
                                "records_per_interval": {t: len(v) for t, v in values.items()},
                                "refusals": node._refusals,
                                "receivers": {i: r[0] for i, r in node.receivers().items()},
                                "executors": sorted(executor_pids_of(sc)),
                            },
                            default=str,
                        )
                    )
                block = node._pending_blocks()[0]
                holders = sorted(block.executors, key=int)
                receiver_executor = node.receivers()[0][0] if on_executors else None
                if which == "receiver":
                    victim = str(receiver_executor)
                elif which == "replica":
                    victim = next(e for e in holders if e != receiver_executor)
                else:
                    victim = holders[0 if which == "first" else 1]
                os.kill(executor_pids_of(sc)[victim], signal.SIGKILL)
                killed.append(victim)
                victim_block.append({"seq": block.seq, "executors": holders})
            advance()
        for _ in range(60):  # until the client has everything committed
            if not client.is_alive():
                break
            pause.wait(0.2)
            advance()
        client.join(timeout=60)
        intruder.join(timeout=60)
        ssc.awaitTerminationOrTimeout(0)  # raises if an interval failed
        receivers_after = node.receivers() if on_executors else {}
    finally:
        release.set()  # (an error before the kill: the client must not wait for ever)
        ssc.stop(stopSparkContext=False)
    # Stopping the stream stopped its receiver tasks: no job is left running.
    active_after_stop = list(sc.statusTracker().getActiveJobsIds())
    return {
        "kill": which,
        "killed": killed,
        "victim_block": victim_block[0] if victim_block else None,
        "victim_interval": args.at * B,
        "sent": sent,
        "client_errors": failed,
        "intruder": intrusion,
        "refusals": [reason for _, reason in node._refusals],
        "values": {str(t): v for t, v in sorted(values.items())},
        "executors_after": sorted(executor_pids_of(sc), key=int),
        "blocks": {str(t): seqs for t, seqs in sorted(blocks.items())},
        "placement": args.placement,
        "active_jobs_after_stop": active_after_stop,
        "receivers_before": {str(i): r[0] for i, r in receivers_before.items()},
        "receivers_after": {str(i): r[0] for i, r in receivers_after.items()},
    }


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--records", type=int, default=600, help="records sent, 1 per --pace-ms")
    p.add_argument("--pace-ms", type=float, default=5, help="ms between two records sent")
    p.add_argument("--intervals", type=int, default=6, help="intervals before draining")
    p.add_argument("--at", type=int, default=3, help="the interval whose block loses a copy")
    p.add_argument(
        "--kill",
        action="append",
        choices=["none", "first", "second", "receiver", "replica"],
        help="one run per --kill: which copy's executor is killed (default: first, second); "
        "with --placement executors also 'receiver' (the executor running the receiver, "
        "which holds one copy) or 'replica' (the other copy's)",
    )
    p.add_argument(
        "--placement",
        choices=["driver", "executors"],
        default="driver",
        help="where the receiver runs (createStream placement)",
    )
    p.add_argument("--executors", type=int, default=3)
    p.add_argument("--executor-mb", type=int, default=640)
    args = p.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkContext

    from testbed.faults import cluster_conf, wait_for_executors

    master = f"local-cluster[{args.executors},1,{args.executor_mb}]"
    conf = cluster_conf(master, "dstream-receiver-faults", args.executor_mb, args.executors)
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    try:
        for which in args.kill or ["first", "second"]:
            wait_for_executors(sc, args.executors)
            started = time.monotonic()
            result = run(sc, args, which)
            result["seconds"] = round(time.monotonic() - started, 1)
            print(json.dumps(result), flush=True)
    finally:
        sc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
