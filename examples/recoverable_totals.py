"""Running totals per word that survive a crash of the driver: run it, kill it (Ctrl-C,
or kill -9), run it again with the same directory, and it resumes where the last completed
interval left off (state from its checkpoint, the intervals since recomputed, the intervals
missed while it was down run), each interval's totals saved exactly once.

    python examples/recoverable_totals.py CHECKPOINT_DIR [SECONDS]
    spark-submit --master URL examples/recoverable_totals.py CHECKPOINT_DIR [SECONDS]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from pyspark import SparkConf, SparkContext

from dstream import StreamingContext


def main(checkpoint: str, seconds: float = 10) -> dict[str, Any]:
    sc = SparkContext.getOrCreate(SparkConf().setAppName("totals"))
    fresh = []

    def setup() -> StreamingContext:
        # Called only when the directory holds no program to resume.
        fresh.append(True)
        ssc = StreamingContext(sc, 1)
        ssc.checkpoint(checkpoint)
        words = ssc.rateStream(200, seed=7).flatMap(str.split).map(lambda w: (w, 1))
        totals = words.updateStateByKey(lambda new, old: (old or 0) + sum(new))
        totals.setName("totals").saveAsTextFiles(str(Path(checkpoint) / "out" / "totals"))
        return ssc

    ssc = StreamingContext.getOrCreate(checkpoint, setup)
    ssc.start()
    time.sleep(seconds)
    ssc.stop(stopGraceFully=True)
    saved = sorted(p.name for p in (Path(checkpoint) / "out").glob("totals-*"))
    print(("started fresh" if fresh else "resumed") + f"; {len(saved)} intervals saved")
    return {"resumed": not fresh, "saved": saved}


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 10)
