"""The 10 most frequent words over the last 30 s, every interval (the paper's TopKCount).

Word counts over the window are kept incrementally (with an inverse); the top k is found on
the executors — each partition keeps its own k best, one small task merges them — so only k
records reach the driver.

    python apps/topk.py --rate 5000 --seconds 30
    python apps/topk.py --source files --dir /data/in --k 20
"""

from __future__ import annotations

import heapq
import operator
import sys
from typing import Any

from _cli import parser, run, source, spark

from dstream import DStream, StreamingContext, Time


def _rank(kv: tuple[str, int]) -> tuple[int, str]:
    # Highest count first; ties broken by the word, so the result is deterministic.
    return (-kv[1], kv[0])


def top_words(lines: DStream[str], k: int, window: object) -> DStream[list[tuple[str, int]]]:
    counts = lines.flatMap(str.split).map(lambda w: (w, 1))
    windowed = counts.reduceByKeyAndWindow(operator.add, operator.sub, window)
    local = windowed.mapPartitions(lambda it: [heapq.nsmallest(k, it, key=_rank)])
    return local.reduce(lambda a, b: heapq.nsmallest(k, a + b, key=_rank))


def show(time: Time, rdd: Any) -> None:
    for top in rdd.collect():
        words = "  ".join(f"{w}:{c}" for w, c in top)
        print(f"[{time.strftime('%H:%M:%S')}] top {len(top)}: {words}", flush=True)


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__ or "")
    p.add_argument("--k", type=int, default=10)
    args = p.parse_args(argv)
    sc = spark(args, "dstream-topk")
    ssc = StreamingContext(sc, args.batch)
    top_words(source(ssc, args), args.k, args.window).foreachRDD(show)
    return run(ssc, args)


if __name__ == "__main__":
    sys.exit(main())
