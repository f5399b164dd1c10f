"""2,000 intervals of a windowed count with an inverse (checkpointed, and the same window
under the "replay" and "replicate" recovery strategies) and of track(), on a ManualClock:
does anything grow? Samples, every --every intervals, the lineage depth of the states'
RDDs (lines of toDebugString), the driver's bookkeeping (remembered RDDs, state records,
shuffles kept for rebuilds), the checkpoint directories on disk and the Python heap
(tracemalloc).

    .venv/bin/python -m bench.engine.longrun --intervals 2000 --every 250
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from bench.common.spark import spark_context
from dstream.scheduler.engine import engine_of


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--intervals", type=int, default=2000)
    p.add_argument("--every", type=int, default=250)
    p.add_argument(
        "--out", default=str(Path(__file__).resolve().parents[1] / "results" / "longrun.json")
    )
    args = p.parse_args()
    from dstream import Duration, ManualClock, StreamingContext, Time
    from dstream.streams.state_base import StateStream

    sc = spark_context("dstream-bench-longrun")
    ckpt = tempfile.mkdtemp(prefix="dstream-longrun-")
    clock = ManualClock(0)
    ssc = StreamingContext(sc, Duration(1000), clock=clock)
    ssc.checkpoint(ckpt)
    pairs = ssc.rateStream(20, numPartitions=1, seed=9).map(lambda line: (line[:1], 1))
    window = pairs.reduceByKeyAndWindow(operator.add, operator.sub, 5, 1, 1)
    sessions = pairs.track(lambda k, e: 1, lambda k, s, e: s + 1, 3, numPartitions=1)
    replayed = pairs.reduceByKeyAndWindow(operator.add, operator.sub, 5, 1, 1)
    replayed.recoveryStrategy("replay")
    replicated = pairs.reduceByKeyAndWindow(operator.add, operator.sub, 5, 1, 1)
    replicated.recoveryStrategy("replicate", every=20)
    seen: dict[str, Any] = {}
    replayed.foreachRDD(lambda rdd: seen.__setitem__("replay", rdd) or rdd.count())
    replicated.foreachRDD(lambda rdd: seen.__setitem__("replicate", rdd) or rdd.count())
    window.foreachRDD(lambda rdd: seen.__setitem__("window", rdd) or rdd.count())
    sessions.foreachRDD(lambda rdd: seen.__setitem__("track", rdd) or rdd.count())
    ssc.start()
    tracemalloc.start()
    began = time.time()
    samples = []
    for i in range(1, args.intervals + 1):
        clock.advance(1000)
        if not ssc.wait_for_batch(Time(i * 1000), 300):
            raise RuntimeError(f"interval {i} did not complete")
        if i % args.every == 0:
            graph = engine_of(ssc).graph
            states = [s for s in graph.streams if isinstance(s, StateStream)]
            sample = {
                "interval": i,
                "window_lineage": len(seen["window"].toDebugString().decode().splitlines()),
                "track_lineage": len(seen["track"].toDebugString().decode().splitlines()),
                "replay_lineage": len(seen["replay"].toDebugString().decode().splitlines()),
                "replicate_lineage": len(seen["replicate"].toDebugString().decode().splitlines()),
                "shuffles_kept": sum(len(getattr(s, "_shuffled", ())) for s in states),
                "remembered_rdds": sum(len(s._generated) for s in graph.streams),
                "state_records": sum(len(s._built_on) for s in states),
                "checkpoint_dirs": sum(
                    len([n for n in os.listdir(os.path.join(ckpt, d)) if n.isdigit()])
                    for d in os.listdir(ckpt)
                    if d.startswith("state-")
                ),
                "python_heap_kb": tracemalloc.get_traced_memory()[0] // 1024,
                "seconds_per_interval": (time.time() - began) / i,
            }
            samples.append(sample)
            print(json.dumps(sample), flush=True)
    tracemalloc.stop()
    ssc.stop(stopSparkContext=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"samples": samples}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
