"""Heavy hitters over a Count-Min sketch whose counters are recovered within a bound
(AF-Stream's Experiment 3, on dstream): packets ``(source, destination, bytes)`` add their
bytes to one counter per row of a sketch kept by ``updateStateByKey``; a pair is a heavy
hitter once its estimate (the smallest of its counters) passes a threshold.

The sketch's counters use ``approximateRecovery(maxDivergence=BOUND)``: a lost executor's
counters are restored from copies that lag by at most their share of BOUND bytes, so no
counter loses more than BOUND in all, however many failures. Reporting the pairs whose
estimate is within BOUND of the threshold therefore misses no heavy hitter (the estimate
only ever undercounts by the lost bytes), and BOUND far below the threshold keeps false
positives few: here 6 KB against 60 KB.

    python examples/heavy_hitters.py [SECONDS]
    spark-submit --master URL examples/heavy_hitters.py [SECONDS]
"""

from __future__ import annotations

import hashlib
import random
import sys
import time
from collections import Counter
from typing import Any

from pyspark import SparkConf, SparkContext

from dstream import StreamingContext

ROWS, WIDTH = 4, 256  # the sketch: 4 rows of 256 counters
THRESHOLD = 60_000  # bytes: a heavy hitter
BOUND = 6_000  # bytes the sketch may lose in all to failures


def column(row: int, pair: tuple[str, str]) -> int:
    """The counter of ``pair`` in ``row`` (one hash function a row, the same everywhere; not
    CRC-32, which is linear: two pairs that collide in one row would in every row)."""
    digest = hashlib.blake2b(f"{pair[0]}|{pair[1]}".encode(), digest_size=4, salt=bytes([row]))
    return int.from_bytes(digest.digest(), "big") % WIDTH


def packets(interval: int, n: int = 400) -> list[tuple[str, str, int]]:
    """One interval's packets: a few elephant flows among many mice (the same every run)."""
    rng = random.Random(interval)
    hosts = [f"10.0.0.{i}" for i in range(40)]
    out = []
    for _ in range(n):
        if rng.random() < 0.3:  # five elephant flows carry 30 % of the packets
            src, dst = hosts[rng.randrange(5)], hosts[-1]
        else:
            src, dst = rng.choice(hosts), rng.choice(hosts)
        out.append((src, dst, rng.randint(40, 1500)))
    return out


def main(seconds: float = 8, intervals: int = 30) -> dict[str, Any]:
    sc = SparkContext.getOrCreate(SparkConf().setAppName("heavy-hitters"))
    ssc = StreamingContext(sc, 1)
    stream = ssc.queueStream([packets(i) for i in range(intervals)])
    cells = stream.flatMap(
        lambda p: [((row, column(row, (p[0], p[1]))), p[2]) for row in range(ROWS)]
    )
    sketch = cells.updateStateByKey(lambda new, old: (old or 0) + sum(new), numPartitions=4)
    sketch.approximateRecovery(maxDivergence=BOUND)  # "l1": bytes lost in all

    # Each interval: the pairs seen, their counters, the smallest of each pair's.
    seen = stream.map(lambda p: (p[0], p[1])).transform(lambda rdd: rdd.distinct())
    wanted = seen.flatMap(lambda pair: [((row, column(row, pair)), pair) for row in range(ROWS)])
    estimates = wanted.join(sketch).map(lambda kv: kv[1]).reduceByKey(min)
    heavy = estimates.filter(lambda kv: kv[1] + BOUND >= THRESHOLD)
    found: dict[tuple[str, str], int] = {}
    heavy.foreachRDD(lambda rdd: found.update(rdd.collect()))
    ssc.start()
    time.sleep(seconds)
    ssc.stop(stopSparkContext=False, stopGraceFully=True)

    # What an exact count says, over the intervals the run saw.
    done = len(ssc.recentProgress)
    exact: Counter[tuple[str, str]] = Counter()
    for i in range(done):
        for src, dst, size in packets(i):
            exact[(src, dst)] += size
    truth = {pair for pair, total in exact.items() if total >= THRESHOLD}
    print(f"{done} intervals: {len(found)} reported, {len(truth)} heavy hitters")
    for pair, estimate in sorted(found.items(), key=lambda kv: -kv[1]):
        print(f"  {pair[0]} -> {pair[1]}: ~{estimate:,} bytes (exact {exact[pair]:,})")
    return {
        "intervals": done,
        "found": found,
        "truth": truth,
        "exact": dict(exact),
        "threshold": THRESHOLD,
        "bound": BOUND,
    }


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 8)
