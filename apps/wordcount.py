"""Streaming word count over a sliding window: the main demo job.

Counts the words of the last 30 s (by default), every interval, incrementally: each
interval's counts are added to the window's and the counts of the interval that left are
subtracted (reduceByKeyAndWindow with an inverse). Prints the most frequent words of the
window every interval, for a bounded time, then stops cleanly.

    python apps/wordcount.py --rate 2000 --seconds 20
    python apps/wordcount.py --source files --dir /data/in --window 60s --seconds 120
    python apps/wordcount.py --source files --dir /data/in --columnar   # Arrow fast path
"""

from __future__ import annotations

import operator
import sys
from typing import Any

from _cli import parser, run, source, spark

from dstream import DStream, StreamingContext, Time
from dstream.api.columnar import BatchStream


def windowed_counts(lines: DStream[str], window: object) -> DStream[tuple[str, int]]:
    pairs = lines.flatMap(str.split).map(lambda w: (w, 1))
    return pairs.reduceByKeyAndWindow(operator.add, operator.sub, window)


def windowed_counts_columnar(batches: BatchStream, window: object) -> DStream[tuple[str, int]]:
    """The same counts on the columnar fast path: lines stay in Arrow arrays, the words of
    each task are counted there, and only (word, count) pairs reach the window."""
    return batches.words().countByValueAndWindow(window)


def print_top(n: int) -> Any:
    def show(time: Time, rdd: Any) -> None:
        top = rdd.takeOrdered(n, key=lambda kv: (-kv[1], kv[0]))
        words = "  ".join(f"{w}:{c}" for w, c in top)
        print(f"[{time.strftime('%H:%M:%S')}] top {n} of the window: {words}", flush=True)

    return show


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__ or "")
    p.add_argument("--top", type=int, default=5)
    p.add_argument(
        "--columnar",
        action="store_true",
        help="read the files as Arrow arrays in the workers (textBatchStream; --source files)",
    )
    args = p.parse_args(argv)
    if args.columnar and (args.source != "files" or not args.dir):
        raise SystemExit("--columnar reads a directory of files: add --source files --dir DIR")
    sc = spark(args, "dstream-wordcount")
    ssc = StreamingContext(sc, args.batch)
    if args.columnar:
        counts = windowed_counts_columnar(ssc.textBatchStream(args.dir), args.window)
    else:
        counts = windowed_counts(source(ssc, args), args.window)
    counts.setName(
        "counts"
    )  # the name the shell gives it: python -m dstream shell apps/wordcount.py
    counts.foreachRDD(print_top(args.top))
    return run(ssc, args)


if __name__ == "__main__":
    sys.exit(main())
