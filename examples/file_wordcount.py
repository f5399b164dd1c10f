"""Word counts of the text files that appear in a directory, one interval a second; each
interval's counts are saved exactly once (a directory per interval, renamed into place).

    python examples/file_wordcount.py [SECONDS]
    spark-submit --master URL examples/file_wordcount.py [SECONDS]

It writes its own input: a thread drops a small file of words into the watched directory
twice a second (written under a hidden name, then renamed: a file stream reads a file once,
by the time it appeared).
"""

from __future__ import annotations

import ast
import sys
import tempfile
import threading
import time
from pathlib import Path

from pyspark import SparkConf, SparkContext

from dstream import StreamingContext

WORDS = ["stream", "batch", "spark", "lineage", "interval"]


def write_files(directory: Path, stop: threading.Event) -> int:
    """Drop a file of 10 words every half second until stopped; the number of words."""
    written = 0
    while not stop.is_set():
        n = written // 10
        hidden, final = directory / f".part-{n}", directory / f"part-{n}.txt"
        hidden.write_text(" ".join(WORDS[(n + i) % len(WORDS)] for i in range(10)) + "\n")
        hidden.rename(final)
        written += 10
        stop.wait(0.5)
    return written


def main(seconds: float = 10) -> dict[str, int]:
    sc = SparkContext.getOrCreate(SparkConf().setAppName("file-wordcount"))
    work = Path(tempfile.mkdtemp(prefix="file-wordcount-"))
    incoming, out = work / "in", work / "out"
    incoming.mkdir()

    ssc = StreamingContext(sc, 1)
    words = ssc.textFileStream(str(incoming)).flatMap(str.split)
    counts = words.map(lambda w: (w, 1)).reduceByKey(lambda a, b: a + b)
    counts.pprint()
    counts.saveAsTextFiles(str(out / "counts"), "txt")
    ssc.start()

    stop = threading.Event()
    result: list[int] = []
    writer = threading.Thread(target=lambda: result.append(write_files(incoming, stop)))
    writer.start()
    time.sleep(seconds)
    stop.set()
    writer.join()
    time.sleep(2)  # the last files' interval
    ssc.stop(stopGraceFully=True)

    # Every word written is counted once across the saved intervals.
    totals: dict[str, int] = {}
    for part in sorted(out.glob("counts-*.txt/part-*")):
        for line in part.read_text().splitlines():
            word, count = ast.literal_eval(line)  # saveAsTextFiles writes str((word, count))
            totals[word] = totals.get(word, 0) + count
    print(f"{result[0]} words written, {sum(totals.values())} counted: {totals}")
    return totals


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 10)
