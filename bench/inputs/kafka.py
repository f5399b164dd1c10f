"""Records per second read from Kafka at 1 s intervals: dstream against Structured
Streaming's Kafka source, on the same topic, in the same run.

A topic of ``--partitions`` partitions is filled with ``--records`` 100-byte text records
(words from dstream's Zipf vocabulary). Each system then reads the whole topic from its
earliest offset with 1 s intervals, at most ``--per-interval`` records per interval (spread
over the partitions: ``maxRecordsPerPartition`` for dstream, ``maxOffsetsPerTrigger`` for
Structured Streaming), and counts the records that contain a word (Grep). The metric is
records read per second of wall time from the first interval that read records to the last
(a system that keeps up reads ``--per-interval`` records/s; one that does not falls behind
its 1 s trigger). Every system must count the same matches: a system whose count differs
is reported as wrong, not as fast.

Systems, each on the same SparkContext (local[2] by default), one after the other, in
alternating order over ``--rounds`` rounds:

- ``dstream``: ``createDirectBatchStream(...).contains(word).count()``, the columnar path
  (values as Arrow arrays, read by confluent-kafka in the Python workers);
- ``dstream-records``: ``createDirectStream(...)`` + ``filter`` + ``count``, per record;
- ``structured``: ``readStream.format("kafka")`` + ``filter(contains)`` + ``count`` per
  ``foreachBatch``, processing-time trigger 1 s. Its connector (spark-sql-kafka-0-10) comes
  from Maven Central (``bash jvm-shim/kafka/build.sh connector``); Central serves no 4.3.0,
  so it is 4.2.0 on Spark 4.3.0, and the output says so.

    .venv/bin/python -m bench.inputs.kafka --smoke                 # seconds: checks it all runs
    .venv/bin/python -m bench.inputs.kafka --records 20000000 --per-interval 2000000 --rounds 3

Writes ``bench/results/kafka.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from testbed.kafka import KafkaBroker  # noqa: E402

CONNECTOR = REPO / "jvm-shim" / "kafka" / "connector" / "target" / "lib"
WORD = "zu"  # the most frequent word of the vocabulary
SYSTEMS = ("dstream", "dstream-records", "structured")


def fill(bootstrap: str, topic: str, records: int) -> int:
    """Produce ``records`` lines; return how many contain WORD (the expected count)."""
    from confluent_kafka import Producer

    from dstream.sources.textgen import generate_lines

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 50,
            "batch.size": 1 << 20,
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    matches, chunk = 0, 50_000
    for start in range(0, records, chunk):
        lines = generate_lines(start, min(chunk, records - start), 100)
        matches += sum(WORD in line.split() for line in lines)
        for line in lines:
            while True:
                try:
                    producer.produce(topic, line.encode())
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.poll(0)
    if producer.flush(300):
        raise RuntimeError("the topic could not be filled: records not acknowledged")
    return matches


class Progress:
    """(wall time, records read, matches) per interval, from any thread."""

    def __init__(self) -> None:
        self.rows: list[tuple[float, int, int]] = []
        self.lock = threading.Lock()
        self.done = threading.Event()

    def add(self, records: int, matches: int, total: int) -> None:
        with self.lock:
            self.rows.append((time.monotonic(), records, matches))
            if sum(r[1] for r in self.rows) >= total:
                self.done.set()

    def result(self) -> dict[str, Any]:
        with self.lock:
            busy = [r for r in self.rows if r[1] > 0]
        read = sum(r[1] for r in busy)
        matches = sum(r[2] for r in busy)
        seconds = 0.0
        if busy:
            # From the completion of the interval before the first one with records (or 1 s
            # before that one's) to the last one's completion: the intervals that read.
            at = self.rows.index(busy[0])
            begin = self.rows[at - 1][0] if at > 0 else busy[0][0] - 1.0
            seconds = busy[-1][0] - begin
        return {
            "records": read,
            "matches": matches,
            "intervals": len(busy),
            "seconds": round(seconds, 2),
            "records_per_s": round(read / seconds) if seconds > 0 else None,
        }


def run_dstream(sc: Any, args: argparse.Namespace, topic: str, columnar: bool) -> dict[str, Any]:
    from dstream import StreamingContext, StreamingListener
    from dstream.kafka import createDirectBatchStream, createDirectStream

    progress = Progress()
    ssc = StreamingContext(sc, 1)
    kafka = {"bootstrap.servers": args.bootstrap, "auto.offset.reset": "earliest"}
    cap = max(1, args.per_interval // args.partitions)
    if columnar:
        matches = createDirectBatchStream(ssc, [topic], kafka, maxRecordsPerPartition=cap)
        counts = matches.mapBatches(_lines_with_word).count()
    else:
        stream = createDirectStream(ssc, [topic], kafka, maxRecordsPerPartition=cap)
        counts = stream.filter(lambda kv: WORD in kv[1].split()).count()
    found: dict[int, int] = {}
    counts.foreachRDD(lambda t, rdd: found.__setitem__(t.ms, rdd.collect()[0]))

    class Listen(StreamingListener):
        def onBatchCompleted(self, batchCompleted: Any) -> None:
            info = batchCompleted.batchInfo()
            progress.add(info.numRecords(), found.get(info.batchTime().ms, 0), args.records)

    ssc.addStreamingListener(Listen())
    ssc.start()
    progress.done.wait(args.timeout)
    ssc.stop(stopSparkContext=False)
    return progress.result()


def _lines_with_word(batch: Any) -> Any:
    """The lines that hold WORD as a word (what ``WORD in line.split()`` keeps), with
    Arrow kernels: split into words, compare, map hits back to their lines."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    words = pc.utf8_split_whitespace(batch)
    hit = np.asarray(pc.equal(words.flatten(), WORD).fill_null(False))
    parents = np.asarray(pc.list_parent_indices(words))
    mask = np.zeros(len(batch), dtype=bool)
    mask[parents[hit]] = True
    return batch.filter(pa.array(mask))


def run_structured(spark: Any, args: argparse.Namespace, topic: str) -> dict[str, Any]:
    from pyspark.sql import functions as F  # noqa: N812 (the usual name)

    progress = Progress()
    frame = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(args.per_interval))
        .load()
        .select(F.col("value").cast("string").alias("line"))
    )

    def batch(df: Any, batch_id: int) -> None:
        df = df.cache()
        n = df.count()
        hits = df.filter(F.array_contains(F.split(F.col("line"), " "), WORD)).count()
        df.unpersist()
        progress.add(n, hits, args.records)

    query = frame.writeStream.foreachBatch(batch).trigger(processingTime="1 second").start()
    try:
        progress.done.wait(args.timeout)
    finally:
        query.stop()
    return progress.result()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--records", type=int, default=5_000_000, help="records in the topic")
    p.add_argument("--per-interval", type=int, default=1_000_000, help="cap per 1 s interval")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    p.add_argument("--master", default="local[2]")
    p.add_argument("--bootstrap", default=None, help="an existing broker (default: start one)")
    p.add_argument("--timeout", type=float, default=600, help="seconds per system and round")
    p.add_argument("--smoke", action="store_true", help="tiny run: checks that it all works")
    p.add_argument("--out", default=str(REPO / "bench" / "results" / "kafka.json"))
    args = p.parse_args(argv)
    if args.smoke:
        args.records, args.per_interval, args.rounds, args.timeout = 20_000, 10_000, 1, 120
    broker = None
    if args.bootstrap is None:
        broker = KafkaBroker(heap_mb=1024).start()
        args.bootstrap = broker.bootstrap
    try:
        return measure(args)
    finally:
        if broker is not None:
            broker.close()


def measure(args: argparse.Namespace) -> int:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from dstream.sparkconf import recommended_conf

    conf = recommended_conf(args.master, "bench-kafka").set("spark.ui.enabled", "false")
    connector = sorted(str(j) for j in CONNECTOR.glob("*.jar"))
    if "structured" in args.systems:
        if not connector:
            raise SystemExit(
                f"Structured Streaming's Kafka source is not built ({CONNECTOR} is empty): "
                "run `bash jvm-shim/kafka/build.sh connector`, or leave out --systems structured"
            )
        conf.set("spark.jars", ",".join(connector))
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    spark = SparkSession(sc)
    topic = f"bench-{int(time.time())}"
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    admin.create_topics([NewTopic(topic, args.partitions, 1)])[topic].result(60)
    began = time.monotonic()
    expected = fill(args.bootstrap, topic, args.records)
    seconds = time.monotonic() - began
    print(f"filled {topic}: {args.records} records in {seconds:.1f} s, {expected} contain {WORD!r}")
    spark_version = sc.version
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in args.systems}
    try:
        for round_ in range(args.rounds):
            order = args.systems if round_ % 2 == 0 else list(reversed(args.systems))
            for system in order:
                if system == "structured":
                    result = run_structured(spark, args, topic)
                else:
                    result = run_dstream(sc, args, topic, columnar=system == "dstream")
                result["correct"] = (
                    result["records"] == args.records and result["matches"] == expected
                )
                runs[system].append(result)
                print(f"round {round_} {system}: {json.dumps(result)}", flush=True)
    finally:
        sc.stop()
    summary = {}
    for system, results in runs.items():
        rates = [r["records_per_s"] for r in results if r["correct"] and r["records_per_s"]]
        summary[system] = {
            "median_records_per_s": statistics.median(rates) if rates else None,
            "all_correct": all(r["correct"] for r in results),
        }
        print(f"{system}: {summary[system]}", flush=True)
    report = {
        "args": {k: v for k, v in vars(args).items() if k != "bootstrap"},
        "connector": [Path(j).name for j in CONNECTOR.glob("*.jar")],
        "spark": spark_version,
        "runs": runs,
        "summary": summary,
    }
    if not args.smoke:
        Path(args.out).write_text(json.dumps(report, indent=1))
        print(f"wrote {args.out}", flush=True)
    wrong = [s for s, v in summary.items() if not v["all_correct"]]
    if wrong:
        print(f"wrong results from: {', '.join(wrong)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
