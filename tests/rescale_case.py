"""A keyed total that a run-time ``rescale(8)`` doubles, run as a driver of its own and
killed with SIGKILL (tests/recovery/test_rescale_restart.py):

    python -m tests.rescale_case IN OUT CKPT --rescale-before 3 --kill-after 5

runs the program on a ManualClock from T0, calls ``rescale(8)`` once interval 2 is done (so
interval 3 is the first with 8 partitions), and kills itself once interval 5's metadata
record is written. The program writes, per interval, the partition count of its state's RDD
into ``OUT/parts/<interval>`` (a driver-side output, saved with the program like any other)."""

from __future__ import annotations

import argparse
import os
import signal
from pathlib import Path
from typing import Any

from dstream import Duration, ManualClock, StreamingContext, Time
from tests.integration.test_recovery import T0, B, put

INTERVALS = 8


def write_inputs(indir: Path) -> None:
    for i in range(1, INTERVALS + 1):
        put(indir, i)


def program(
    sc: Any, clock: ManualClock, indir: Path, out: Path, ckpt: Path, partitions: int = 4
) -> tuple[StreamingContext, Any]:
    ssc = StreamingContext(sc, Duration(B), clock=clock)
    ssc.checkpoint(str(ckpt))
    pairs = ssc.textFileStream(str(indir)).flatMap(str.split).map(lambda w: (w, 1))
    totals = pairs.updateStateByKey(
        lambda new, old: (old or 0) + sum(new), numPartitions=partitions
    )
    totals.setName("totals").checkpoint(2)
    totals.saveAsTextFiles(str(out / "totals"))
    parts = out / "parts"

    def record(t: Time, rdd: Any) -> None:
        parts.mkdir(exist_ok=True)
        (parts / str((t.ms - T0) // B)).write_text(str(rdd.getNumPartitions()))

    totals.foreachRDD(record)
    return ssc, totals


def partition_counts(out: Path) -> list[int]:
    """The state's partition count of intervals 1.. as the program recorded them."""
    found = {int(p.name): int(p.read_text()) for p in (out / "parts").iterdir()}
    return [found[i] for i in range(1, max(found) + 1)]


def advance(ssc: StreamingContext, clock: ManualClock, upto: int) -> None:
    while clock.now().ms < T0 + upto * B:
        clock.advance(B)
        assert ssc.wait_for_batch(clock.now(), 120)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("indir", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("ckpt", type=Path)
    p.add_argument("--rescale-before", type=int, required=True)
    p.add_argument("--kill-after", type=int, required=True)
    args = p.parse_args()
    from pyspark import SparkContext

    from dstream.scheduler.engine import engine_of
    from dstream.sparkconf import recommended_conf

    conf = recommended_conf("local[2]", "rescale-case").set("spark.ui.enabled", "false")
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    clock = ManualClock(T0)
    ssc, totals = program(sc, clock, args.indir, args.out, args.ckpt)
    ssc.start()
    advance(ssc, clock, args.rescale_before - 1)
    totals.rescale(8)
    advance(ssc, clock, args.kill_after)
    engine_of(ssc).checkpointer.wait_idle(60)
    os.kill(os.getpid(), signal.SIGKILL)
    return 1


if __name__ == "__main__":
    raise SystemExit(main())
