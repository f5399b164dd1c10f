"""dstream on the peers harness's input (bench/peers, #62): the columnar file source
(``textBatchStream``), Grep as ``contains`` in Arrow then a count per event second, the
keyed running total as ``updateStateByKey`` over each interval's per-key sums."""

from __future__ import annotations

import argparse
import sys
import time


def common_args(description: str) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--workload", choices=("grep", "total"), required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--interval-ms", type=int, default=1000)
    p.add_argument("--parallelism", type=int, default=2)
    p.add_argument("--checkpoint-dir", required=True)
    p.add_argument("--checkpoint-ms", type=int, default=10_000, help="0: state checkpoints off")
    p.add_argument("--master", default="local[2]")
    return p.parse_args()


def main() -> int:
    args = common_args(__doc__ or "")
    from bench.common.spark import spark_context
    from bench.peers.records import PATTERN
    from dstream import StreamingContext

    sc = spark_context("peers-dstream", args.master, spark__ui__enabled="false")
    ssc = StreamingContext(sc, args.interval_ms / 1000)
    ssc.checkpoint(args.checkpoint_dir)
    batches = ssc.textBatchStream(args.input)
    out = sys.stdout

    def emit(lines: list[str]) -> None:
        if lines:
            out.write("".join(lines))
            out.flush()

    if args.workload == "grep":
        per_second = (
            batches.contains(PATTERN)
            .records()
            .map(lambda line: (int(line[:13]) // 1000, (1, int(line[:13]))))
            .reduceByKey(lambda a, b: (a[0] + b[0], max(a[1], b[1])), args.parallelism)
        )
        per_second.foreachRDD(
            lambda rdd: emit([f"g {s} {n} {ts}\n" for s, (n, ts) in rdd.collect()])
        )
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
        totals.filter(lambda kv: kv[1][2]).foreachRDD(
            lambda rdd: emit([f"t {k} {v[0]} {v[1]}\n" for k, v in rdd.collect()])
        )
    ssc.start()
    print("# started", int(time.time() * 1000), file=sys.stderr, flush=True)
    ssc.awaitTermination()
    return 0


if __name__ == "__main__":
    sys.exit(main())
