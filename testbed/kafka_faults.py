"""Executor loss under a Kafka stream, for real: one process, one ``local-cluster``
SparkContext (separate executor JVMs), a producer writing numbered records throughout, and
executor JVMs killed with SIGKILL in the middle of an interval. Prints one JSON object.

    python -m testbed.kafka_faults --bootstrap 127.0.0.1:9092 --topic events --kill 1@6

The program counts records per key with ``updateStateByKey`` (a state stream, checkpointed
every 4 s) and collects every interval's values. A killed executor takes cached input,
state partitions and running tasks with it; Spark recomputes them from lineage, and the
recomputed Kafka tasks read exactly their interval's recorded offsets again. The test
(tests/kafka/test_executor_kill.py) checks that every produced record was read by exactly
one interval and that the final counts are exact. The clock is a ManualClock advanced
interval by interval (as testbed.faults does); the producer runs in real time.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

B = 1000  # ms per interval


def produce(bootstrap: str, topic: str, count: int, stop: threading.Event, sent: list[str]) -> None:
    """``count`` numbered records (key k<i mod 7>), one every 2 ms (or until ``stop``),
    then wait for Kafka to acknowledge them all."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(count):
        if stop.wait(0.002):
            break
        producer.produce(topic, f"s{i}".encode(), f"k{i % 7}".encode())
        sent.append(f"s{i}")
        producer.poll(0)
    if producer.flush(120):
        raise RuntimeError("the producer's records were not all acknowledged in 120 s")


def run(sc: Any, args: argparse.Namespace, root: str) -> dict[str, Any]:
    from dstream import Duration, ManualClock, StreamingContext, StreamingListener, Time
    from dstream.kafka import createDirectStream
    from testbed.processes import executor_pids_of

    how_many, at = args.kill
    clock = ManualClock(0)
    ssc = StreamingContext(sc, Duration(B), clock=clock)
    ssc.checkpoint(root)
    kafka = {"bootstrap.servers": args.bootstrap, "auto.offset.reset": "earliest"}
    # A cap per partition spreads the records over the intervals whatever the machine's
    # speed; small tasks give every executor some of an interval's input.
    events = createDirectStream(
        ssc,
        [args.topic],
        kafka,
        maxRecordsPerPartition=args.per_partition,
        maxRecordsPerTask=max(1, args.per_partition // 2),
    )
    values: dict[int, list[str]] = {}
    events.foreachRDD(lambda t, rdd: values.__setitem__(t.ms, rdd.values().collect()))
    totals = events.updateStateByKey(lambda new, old: (old or 0) + len(new), 3)
    totals.checkpoint(4)
    final: dict[str, int] = {}
    totals.foreachRDD(lambda rdd: final.update(dict(rdd.collect())))
    killed: list[str] = []

    def kill_executors() -> None:
        pids = executor_pids_of(sc)
        for executor_id in sorted(pids, key=int)[:how_many]:
            os.kill(pids[executor_id], signal.SIGKILL)
            killed.append(executor_id)

    class Faults(StreamingListener):
        def onBatchStarted(self, batchStarted: Any) -> None:
            if how_many and batchStarted.batchInfo().batchTime().ms == at * B:
                threading.Timer(args.kill_delay, kill_executors).start()

    if args.sink_topic:
        write_with_a_kill(ssc, events, args, killed)
    else:
        ssc.addStreamingListener(Faults())
    stop, sent = threading.Event(), list[str]()
    producer = threading.Thread(
        target=produce, args=(args.bootstrap, args.topic, args.records, stop, sent)
    )
    producer.start()
    ssc.start()
    try:
        interval = 0

        def advance() -> None:
            nonlocal interval
            interval += 1
            clock.advance(B)
            began = time.monotonic()
            if not ssc.wait_for_batch(Time(interval * B), 300):
                raise RuntimeError(f"interval {interval} did not complete")
            print(
                f"interval {interval}: {len(values.get(interval * B, []))} records, "
                f"{time.monotonic() - began:.1f} s, killed {killed}",
                file=sys.stderr,
                flush=True,
            )

        pause = threading.Event()
        for _ in range(args.intervals):
            pause.wait(0.3)  # records arrive between intervals (real time)
            advance()
        producer.join()
        for _ in range(40):  # the rest of what was produced
            if sum(map(len, values.values())) >= len(sent):
                break
            advance()
        ssc.awaitTerminationOrTimeout(0)  # raises if an interval failed
    finally:
        stop.set()
        ssc.stop(stopSparkContext=False)
    return {
        "killed": killed,
        "sent": sent,
        "values": {str(t): v for t, v in sorted(values.items())},
        "totals": final,
        "executors_after": sorted(executor_pids_of(sc), key=int),
    }


def write_with_a_kill(ssc: Any, events: Any, args: argparse.Namespace, killed: list[str]) -> None:
    """saveToKafka after a shuffle, and the executor JVM running one of interval ``at``'s
    write tasks killed in the middle of it: the task marks itself (its Python worker's pid)
    after half its records and pauses, the driver kills the executor whose process tree
    holds that pid. The retry writes the partition again, its records fetched from the
    shuffle in another order."""
    from pyspark import TaskContext

    from dstream.kafka import saveToKafka
    from testbed.processes import executor_pids_of, process_tree

    _, at = args.kill
    marks = tempfile.mkdtemp(prefix="dstream-writing-")

    def mark_midway(time: Any, rdd: Any) -> Any:
        if time.ms != at * B:
            return rdd

        def slowed(records: Any) -> Any:
            items = list(records)
            half = len(items) // 2
            yield from items[:half]
            task = TaskContext.get()
            if task is not None and task.attemptNumber() == 0 and items:
                with open(os.path.join(marks, f"{os.getpid()}"), "w") as f:
                    f.write("")
                threading.Event().wait(3.0)  # the killer's window
            yield from items[half:]

        return rdd.mapPartitions(slowed)

    def killer() -> None:
        while not (found := os.listdir(marks)):
            threading.Event().wait(0.02)  # real time: the write task marks itself
        worker = int(found[0])
        for executor_id, pid in executor_pids_of(ssc.sparkContext).items():
            if worker in process_tree(pid):
                os.kill(pid, signal.SIGKILL)
                killed.append(executor_id)
                return

    # One record per value, after a shuffle: the order within a reduce partition is the
    # order its blocks are fetched in.
    shuffled = events.map(lambda kv: (kv[1], kv[0])).reduceByKey(lambda a, b: a, 3)
    saveToKafka(
        shuffled.transform(mark_midway),
        args.sink_topic,
        {"bootstrap.servers": args.bootstrap},
        name="faults",
    )
    threading.Thread(target=killer, daemon=True).start()


def parse_kill(text: str) -> tuple[int, int]:
    n, sep, at = text.partition("@")
    if text == "0":
        return (0, 0)
    if not sep or not n.isdigit() or not at.isdigit():
        raise argparse.ArgumentTypeError(f"--kill {text!r}: expected N@INTERVAL (e.g. 1@6) or 0")
    return (int(n), int(at))


def chunks(text: str, size: int = 1 << 16) -> Iterator[str]:
    for i in range(0, len(text), size):
        yield text[i : i + size]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--bootstrap", required=True, help="Kafka bootstrap.servers")
    p.add_argument("--topic", required=True, help="an existing topic, read from the start")
    p.add_argument("--records", type=int, default=3000, help="records produced, 1 per 2 ms")
    p.add_argument("--per-partition", type=int, default=150, help="records/partition/interval")
    p.add_argument("--intervals", type=int, default=8, help="intervals before draining")
    p.add_argument("--kill", type=parse_kill, default=(1, 4), help="N@I: N executors at I")
    p.add_argument("--kill-delay", type=float, default=0.2, help="seconds into the interval")
    p.add_argument("--sink-topic", help="also saveToKafka here; kill mid-write at interval I")
    p.add_argument("--executors", type=int, default=3)
    p.add_argument("--executor-mb", type=int, default=640)
    args = p.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkContext

    from testbed.faults import cluster_conf, wait_for_executors

    master = f"local-cluster[{args.executors},1,{args.executor_mb}]"
    conf = cluster_conf(master, "dstream-kafka-faults", args.executor_mb, args.executors)
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    started = time.monotonic()
    try:
        wait_for_executors(sc, args.executors)
        with tempfile.TemporaryDirectory(prefix="dstream-kafka-faults-") as root:
            result = run(sc, args, root)
    finally:
        sc.stop()
    result["seconds"] = round(time.monotonic() - started, 1)
    for piece in chunks(json.dumps(result)):
        sys.stdout.write(piece)
    sys.stdout.write("\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
