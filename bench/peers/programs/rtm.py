"""Structured Streaming's real-time mode (``trigger(realTime=...)``, pyspark 4.3) on the peers
harness's input (bench/peers, #62). Real-time mode reads and writes Kafka only, so this
program carries two helpers beside the query, in its own process: a feeder that produces each
new file of the watched directory, line by line, into the topic ``in``, and a consumer that
prints what the query writes to ``out``. (Their cost is counted against real-time mode; the
Kafka-in/Kafka-out latency figure is where all systems read and write Kafka.)

Grep: ``filter(contains)`` + ``groupBy(event second).count()``, update mode (each second's
count so far: the harness takes the newest); the running total: ``groupBy(key).sum()``,
update mode; WordCount: ``groupBy(window(event time, --window-ms, interval), word).count()``
in update mode (real-time mode has no processing-time windows: the records' event time is
their file's write time, which the other systems' processing-time windows approximate).
TopK is not supported (a sort and limit per window need complete mode; real-time mode runs
update mode only). The batch duration (``--checkpoint-ms``, default 10 s, at least real-time mode's
minimum of 5 s) is also the checkpoint interval. Spark's Kafka connector: ``bash
jvm-shim/kafka/build.sh connector``; the broker (``--bootstrap``) is the harness's
(testbed/kafka.py)."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CONNECTOR = ROOT / "jvm-shim" / "kafka" / "connector" / "target" / "lib"
PATTERN = "kato"
PREFIX = 24  # bench/peers/records.py's: a record's words start here


def feed(directory: str, bootstrap: str, topic: str, journal: str) -> None:
    """Each new file's lines into ``topic``; the files fed are journaled (a name once its lines
    are flushed), so a restarted program goes on where the killed one stopped."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    done: set[str] = set()
    if os.path.exists(journal):
        with open(journal, encoding="ascii") as f:
            done = set(f.read().split())
    fed = open(journal, "a", encoding="ascii")  # noqa: SIM115 (open for the thread's life)
    while True:
        names = sorted(n for n in os.listdir(directory) if n[0] not in "._" and n not in done)
        for name in names:
            with open(os.path.join(directory, name), "rb") as f:
                for line in f.read().splitlines():
                    while True:
                        try:
                            producer.produce(topic, line)
                            break
                        except BufferError:
                            producer.poll(0.05)
            producer.flush()
            done.add(name)
            fed.write(name + "\n")
            fed.flush()
        if not names:
            time.sleep(0.02)


def consume(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"peers-out-{os.getpid()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    out = sys.stdout
    while True:
        msgs = consumer.consume(10_000, 0.1)
        lines = [m.value().decode() + "\n" for m in msgs if m.error() is None and m.value()]
        if lines:
            out.write("".join(lines))
            out.flush()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--workload", choices=("grep", "total", "wordcount"), required=True)
    p.add_argument("--window-ms", type=int, default=30_000, help="WordCount's")
    p.add_argument("--input", required=True)
    p.add_argument("--interval-ms", type=int, default=1000)
    p.add_argument("--parallelism", type=int, default=2)
    p.add_argument("--checkpoint-dir", required=True)
    p.add_argument("--checkpoint-ms", type=int, default=10_000, help="the batch duration")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--bootstrap", required=True, help="Kafka broker host:port")
    p.add_argument("--topic-prefix", default="peers")
    p.add_argument("--restore", help="ignored: the checkpoint location is the state")
    p.add_argument(
        "--via",
        choices=("files", "kafka"),
        default="files",
        help="kafka: the harness produces the input topic and reads the output topic itself "
        "(no feeder, no consumer here)",
    )
    args = p.parse_args()

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as sf

    from bench.common.spark import bench_conf

    jars = sorted(str(j) for j in CONNECTOR.glob("*.jar"))
    if not jars:
        raise SystemExit("no Kafka connector: run `bash jvm-shim/kafka/build.sh connector`")
    conf = bench_conf(
        "peers-rtm",
        args.master,
        spark__ui__enabled="false",
        spark__sql__shuffle__partitions=str(args.parallelism),
        spark__jars=",".join(jars),
        spark__python__daemon__module="pyspark.daemon",
    )
    spark = SparkSession.builder.config(conf=conf).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    topic_in, topic_out = f"{args.topic_prefix}-in", f"{args.topic_prefix}-out"
    lines = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", topic_in)
        .option("startingOffsets", "earliest")
        .load()
        .select(sf.col("value").cast("string").alias("line"))
    )
    ts = sf.substring("line", 1, 13).cast("long")
    if args.workload == "grep":
        result = (
            lines.where(sf.col("line").contains(PATTERN))
            .select((ts / 1000).cast("long").alias("sec"), ts.alias("ts"))
            .groupBy("sec")
            .agg(sf.count(sf.lit(1)).alias("n"), sf.max("ts").alias("ts"))
            .select(sf.concat_ws(" ", sf.lit("g"), "sec", "n", "ts").alias("value"))
        )
    elif args.workload == "wordcount":
        result = (
            lines.select(
                sf.explode(sf.split(sf.substring("line", PREFIX + 1, 1000), " ")).alias("word"),
                ts.alias("ts"),
                sf.timestamp_millis(ts).alias("et"),
            )
            .where(sf.col("word") != "")
            .groupBy(
                sf.window(
                    "et", f"{args.window_ms} milliseconds", f"{args.interval_ms} milliseconds"
                ),
                "word",
            )
            .agg(sf.count(sf.lit(1)).alias("n"), sf.max("ts").alias("ts"))
            .select(
                sf.concat_ws(
                    " ",
                    sf.lit("w"),
                    sf.unix_millis(sf.col("window.end")),
                    "word",
                    "n",
                    "ts",
                ).alias("value")
            )
        )
    else:
        result = (
            lines.select(
                sf.substring("line", 15, 7).alias("k"),
                sf.substring("line", 23, 1).cast("long").alias("v"),
                ts.alias("ts"),
            )
            .groupBy("k")
            .agg(sf.sum("v").alias("total"), sf.max("ts").alias("ts"))
            .select(sf.concat_ws(" ", sf.lit("t"), "k", "total", "ts").alias("value"))
        )
    query = (
        result.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("topic", topic_out)
        .option("checkpointLocation", os.path.join(args.checkpoint_dir, "rtm"))
        .outputMode("update")
        # Real-time mode refuses batches under spark.sql.streaming.realTimeMode.minBatchDuration
        # (5 s): shorter --checkpoint-ms values are raised to it.
        .trigger(realTime=f"{max(args.checkpoint_ms, 5000) // 1000} seconds")
        .start()
    )
    helpers = (
        (feed, (args.input, args.bootstrap, topic_in, os.path.join(args.checkpoint_dir, "fed"))),
        (consume, (args.bootstrap, topic_out)),
    )
    for target, targs in helpers if args.via == "files" else ():
        threading.Thread(target=target, args=targs, daemon=True).start()
    print("# started", query.id, file=sys.stderr, flush=True)
    query.awaitTermination()
    return 0


if __name__ == "__main__":
    sys.exit(main())
