"""dstream on the peers harness's input (bench/peers, #62): the columnar file source
(``textBatchStream``), Grep as ``contains`` in Arrow then a count per event second, the
keyed running total as ``updateStateByKey`` over each interval's per-key sums, WordCount as
``words().countByValueAndWindow`` (``reduceByKeyAndWindow`` with the inverse, counted in
Arrow per task first, as bench/paper/throughput.py's dstream) and TopK as the same window's
``takeOrdered``-like top words, one job per interval. A window's newest event time rides in
the window as one marker word ``@<ms>`` per task and interval (a max has no inverse, a count
does: the marker leaves the window with its interval)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any


def common_args(description: str) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--workload", choices=("grep", "total", "wordcount", "topk"), required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--interval-ms", type=int, default=1000)
    p.add_argument("--parallelism", type=int, default=2)
    p.add_argument("--checkpoint-dir", required=True)
    p.add_argument("--checkpoint-ms", type=int, default=10_000, help="0: state checkpoints off")
    p.add_argument("--window-ms", type=int, default=30_000, help="WordCount's and TopK's")
    p.add_argument("--master", default="local[2]")
    p.add_argument("--via", choices=("files", "kafka"), default="files")
    p.add_argument("--bootstrap", help="--via kafka: the broker, host:port")
    p.add_argument("--topic-prefix", default="peers", help="--via kafka: <prefix>-in, -out")
    return p.parse_args()


def windowed(batches: Any, args: argparse.Namespace, prefix: int, k: int, emit: Any) -> None:
    """WordCount (every word's count) or TopK (the ``k`` most frequent) over the window."""
    import heapq

    import pyarrow as pa
    import pyarrow.compute as pc

    def text(batch: pa.Array) -> pa.Array:
        """Each record's text after its prefix, and the marker of its newest event time."""
        if len(batch) == 0:
            return batch
        newest = pc.max(pc.cast(pc.utf8_slice_codeunits(batch, 0, 13), pa.int64())).as_py()
        marker = pa.array([f"@{newest}"], type=batch.type)
        return pa.concat_arrays([pc.utf8_slice_codeunits(batch, prefix), marker])

    counts = (
        batches.mapBatches(text)
        .words()
        .countByValueAndWindow(args.window_ms / 1000, args.interval_ms / 1000, args.parallelism)
    )
    rank = lambda kv: (-kv[1], kv[0])  # noqa: E731 (bench/paper/throughput_systems.py's order)

    def task_top(pairs: Any) -> list[tuple[str, int]]:
        """A task's markers and its ``k`` most frequent words: the driver merges these."""
        items = list(pairs)
        words = (kv for kv in items if kv[0][0] != "@")
        return [kv for kv in items if kv[0][0] == "@"] + heapq.nsmallest(k, words, key=rank)

    kind = "w" if args.workload == "wordcount" else "k"

    def output(t: Any, rdd: Any) -> None:
        pairs = rdd.collect() if kind == "w" else rdd.mapPartitions(task_top).collect()
        newest = max((int(w[1:]) for w, _ in pairs if w[0] == "@"), default=0)
        words = [kv for kv in pairs if kv[0][0] != "@"]
        if kind == "k":
            words = heapq.nsmallest(k, words, key=rank)
        emit([f"{kind} {t.ms} {w} {c} {newest}\n" for w, c in words])

    counts.foreachRDD(output)


class LazyProducer:
    """A Kafka producer made at its first record. The driver's output functions are saved
    with the program for driver recovery, and a confluent_kafka ``Producer`` cannot be
    pickled: what is saved is the configuration, not the producer."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.producer: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"config": self.config, "producer": None}

    def produce(self, topic: str, lines: list[str]) -> None:
        if self.producer is None:
            from confluent_kafka import Producer

            self.producer = Producer(self.config)
        for line in lines:
            self.producer.produce(topic, line.rstrip("\n").encode())
        self.producer.flush()


def main() -> int:
    args = common_args(__doc__ or "")
    from bench.common.spark import spark_context
    from bench.peers.records import PATTERN, PREFIX, TOP
    from dstream import StreamingContext

    sc = spark_context("peers-dstream", args.master, spark__ui__enabled="false")
    ssc = StreamingContext(sc, args.interval_ms / 1000)
    ssc.checkpoint(args.checkpoint_dir)
    out = sys.stdout
    kafka = {"bootstrap.servers": args.bootstrap}
    if args.via == "kafka":
        from dstream.kafka import createDirectBatchStream

        # dstream's Kafka source: each interval's offset ranges, journaled, read in the tasks.
        batches = createDirectBatchStream(
            ssc,
            [f"{args.topic_prefix}-in"],
            {**kafka, "group.id": "peers-dstream", "auto.offset.reset": "earliest"},
        )
        producer = LazyProducer({**kafka, "linger.ms": 1})
    else:
        batches = ssc.textBatchStream(args.input)

    def emit(lines: list[str]) -> None:
        """An interval's result lines, gathered on the driver: to stdout, or (--via kafka)
        one record each to ``<prefix>-out`` (WordCount's and TopK's, which the driver
        assembles: the window's newest event time, the top of the tasks' tops)."""
        if lines and args.via == "kafka":
            producer.produce(f"{args.topic_prefix}-out", lines)
        elif lines:
            out.write("".join(lines))
            out.flush()

    def sink(lines: Any) -> None:
        """A stream of result lines: dstream's Kafka sink (--via kafka, exactly once per
        interval from the tasks), or collected and printed."""
        if args.via == "kafka":
            from dstream.kafka import saveToKafka

            saveToKafka(lines, f"{args.topic_prefix}-out", kafka)
        else:
            lines.foreachRDD(lambda rdd: emit([f"{line}\n" for line in rdd.collect()]))

    if args.workload == "grep":
        per_second = (
            batches.contains(PATTERN)
            .records()
            .map(lambda line: (int(line[:13]) // 1000, (1, int(line[:13]))))
            .reduceByKey(lambda a, b: (a[0] + b[0], max(a[1], b[1])), args.parallelism)
        )
        lines = per_second.map(lambda kv: f"g {kv[0]} {kv[1][0]} {kv[1][1]}")
        sink(lines)
    elif args.workload in ("wordcount", "topk"):
        windowed(batches, args, PREFIX, TOP, emit)
    else:

        def update(new: list[tuple[int, int]], old: tuple[int, int, bool] | None) -> tuple:
            total, ts = (old[0], old[1]) if old else (0, 0)
            for value, t in new:
                total += value
                ts = max(ts, t)
            return (total, ts, bool(new))  # the flag: printed this interval

        totals = (
            batches.records()
            .map(lambda line: (line[14:21], (int(line[22]), int(line[:13]))))
            .reduceByKey(lambda a, b: (a[0] + b[0], max(a[1], b[1])), args.parallelism)
            .updateStateByKey(update, args.parallelism)
        )
        # "Off": one checkpoint an hour, longer than any run of the harness (a state's lineage
        # must be cut some time; dstream has no setting without checkpoints).
        totals.checkpoint(args.checkpoint_ms / 1000 if args.checkpoint_ms else 3600)
        sink(totals.filter(lambda kv: kv[1][2]).map(lambda kv: f"t {kv[0]} {kv[1][0]} {kv[1][1]}"))
    ssc.start()
    print("# started", int(time.time() * 1000), file=sys.stderr, flush=True)
    ssc.awaitTermination()
    return 0


if __name__ == "__main__":
    sys.exit(main())
