"""Asynchronous checkpoints keep a long-running program bounded: lineage depth, the driver's
bookkeeping, checkpoint files and Python memory stop growing once checkpoints cycle.

bench/engine/longrun.py runs the same program for 2,000 intervals and reports the same figures.
"""

from __future__ import annotations

import gc
import itertools
import operator
import os
import tracemalloc
from collections import deque
from typing import Any

from dstream import Time
from dstream.scheduler.engine import engine_of
from dstream.streams.state_base import StateStream

from .conftest import Harness


def traced_kb() -> int:
    """Python memory in use once the cycle collector has run (when it last ran otherwise
    moves the figure by hundreds of KB: bench/engine/longrun.py's heap moves +-1 MB unsampled)."""
    gc.collect()
    return tracemalloc.get_traced_memory()[0] // 1024


def lineage_depth(rdd: Any) -> int:
    return len(rdd.toDebugString().decode().splitlines())


def bookkeeping(h: Harness) -> dict[str, int]:
    graph = engine_of(h.ssc).graph
    states = [s for s in graph.streams if isinstance(s, StateStream)]
    return {
        "remembered_rdds": sum(len(s._generated) for s in graph.streams),
        "built_on": sum(len(s._built_on) for s in states),
        "shuffles_kept": sum(len(getattr(s, "_shuffled", ())) for s in states),
        "file_records": sum(len(getattr(s, "batch_files", ())) for s in graph.inputs),
        "pending_batches": len(engine_of(h.ssc).scheduler.pending()),
    }


def test_lineage_bookkeeping_and_memory_stay_flat(harness: Any, tmp_path: Any) -> None:
    h: Harness = harness()
    h.ssc.checkpoint(str(tmp_path))
    pairs = h.ssc.rateStream(20, numPartitions=1, seed=9).map(lambda line: (line[:1], 1))
    windowed = pairs.reduceByKeyAndWindow(operator.add, operator.sub, 4, 1, 1).checkpoint(2)
    sessions = pairs.track(lambda k, e: 1, lambda k, s, e: s + 1, 3, numPartitions=1).checkpoint(2)
    # The same window recovered by replay: lineage cut by rebuilds from its inputs instead.
    replayed = pairs.reduceByKeyAndWindow(operator.add, operator.sub, 4, 1, 1)
    replayed.recoveryStrategy("replay")
    seen: dict[str, Any] = {}
    windowed.foreachRDD(lambda rdd: seen.__setitem__("window", rdd) or rdd.count())
    replayed.foreachRDD(lambda rdd: seen.__setitem__("replay", rdd) or rdd.count())
    sessions.foreachRDD(lambda rdd: seen.__setitem__("track", rdd) or rdd.count())
    seen_names = ("window", "replay", "track")
    # The progress log keeps the last 100 records (a few KB each), so it grows until interval
    # 100; kept at 10 here, it is full before the first sample, and what is measured is
    # growth that would go on. By the first sample (interval 12) the window (4 s), the
    # sessions' timeout (3 s) and the checkpoints (every 2 s) have all turned over twice.
    engine_of(h.ssc).progress._records = deque(maxlen=10)
    h.ssc.start()
    samples = {}
    # Each interval's lineage depth, from interval 13 on.
    depths: dict[str, list[int]] = {name: [] for name in seen_names}
    try:
        for upto in (12, 24, 36):
            while h.clock.now().ms < upto * 1000:
                h.run_batches(1)
                if samples:
                    for name in seen_names:
                        depths[name].append(lineage_depth(seen[name]))
            engine_of(h.ssc).checkpointer.wait_idle(60)
            samples[upto] = {
                **bookkeeping(h),
                "checkpoint_dirs": sum(
                    len([n for n in os.listdir(tmp_path / d) if n.isdigit()])
                    for d in os.listdir(tmp_path)
                    if d.startswith("state-")
                ),
                "traced_kb": traced_kb() if tracemalloc.is_tracing() else 0,
            }
            # Traced from the first sample on (tracing slows every allocation): what the
            # middle and last samples hold is what was allocated since and is still alive.
            if not tracemalloc.is_tracing():
                tracemalloc.start()
    finally:
        tracemalloc.stop()
    first, mid, last = samples[12], samples[24], samples[36]
    # Lineage depth is bounded, not constant: an interval's state is built on the newest
    # checkpoint written by then, and an asynchronous write finishes when it finishes (a
    # slower machine saw 28 lines at interval 36 against 26 at 24). So: over intervals
    # 25-36 the deepest lineage is no deeper than over 13-24 plus two checkpoint periods
    # (2 x 2 intervals) of one interval's growth; lineage that is never cut grows by 12
    # intervals' worth in that time.
    for name, got in depths.items():
        early, late = got[:12], got[12:]
        step = max([b - a for a, b in itertools.pairwise(early)] + [1])
        assert max(late) <= max(early) + 4 * step, (name, got)
    for key in (
        "remembered_rdds",
        "built_on",
        "shuffles_kept",
        "file_records",
    ):
        assert mid[key] == last[key], (key, samples)
    assert last["pending_batches"] == 0
    assert last["checkpoint_dirs"] <= first["checkpoint_dirs"] + 2, samples
    # Python memory after 12 more intervals: no growth beyond noise (a leak of even one
    # object per record or per interval would show here).
    assert last["traced_kb"] - mid["traced_kb"] < 512, samples
    assert h.ssc.wait_for_batch(Time(36_000), 1)
