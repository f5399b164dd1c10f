"""A stateless program and its input for replaying stretches (dstream.scheduler.stretch):
shared by tests/integration/test_replay.py and tests/recovery/test_replay_kill.py, and run
as a driver of its own there:

    python -m tests.replay_case IN OUT BEGIN_MS END_MS [--kill-after N]

replays the program over IN into OUT; with --kill-after the driver kills itself with
SIGKILL once N intervals have completed (a kill -9 in the middle of a stretch)."""

from __future__ import annotations

import argparse
import gzip
import operator
import os
import random
import signal
from pathlib import Path
from typing import Any

from dstream import StreamingContext, StreamingListener, StreamingSettings, Time

B = 1000
T0 = 1_800_000_000_000  # a batch boundary
WORDS = "alpha beta gamma delta epsilon".split()
OUTPUTS = ("lines", "counts", "upper")


def write_inputs(indir: Path, intervals: int, rng: random.Random, gzip_at: int = 6) -> None:
    """0-3 files per interval, in every form Hadoop's line reader has a rule for: \\r\\n
    and lone \\r terminators, a byte order mark, invalid UTF-8, empty lines, no final
    terminator; and at interval ``gzip_at`` a gzip file, which Hadoop's reader decompresses
    (-1: none)."""
    for i in range(intervals):
        for j in range(rng.randrange(4) if i != 3 else 1):
            words = [
                " ".join(rng.choices(WORDS, k=rng.randrange(4))) for _ in range(rng.randrange(30))
            ]
            data = rng.choice(["\n", "\r\n", "\r"]).join(words).encode()
            if j == 1:
                data = b"\xef\xbb\xbf" + data + b"\n\xff\xfe broken \xc3\n"
            name = indir / f"f{i}-{j}.txt"
            if i == gzip_at and j == 0:
                name = indir / f"f{i}-{j}.txt.gz"
                data = gzip.compress(b"zeta eta\ntheta\n")
            name.write_bytes(data)
            at_ms = T0 + i * B + rng.randrange(B)
            os.utime(name, ns=(at_ms * 1_000_000,) * 2)


def stateless(
    sc: Any, indir: Path, out: Path, stretch: int, checkpoint: str = "ckpt"
) -> StreamingContext:
    """Three outputs: lines filtered, word counts (a reduceByKey into 3 partitions, with a
    suffix), and (length, line upper-cased) pairs: what a replay may stretch."""
    ssc = StreamingContext(sc, 1, settings=StreamingSettings(replay_stretch=stretch))
    ssc.checkpoint(str(out / checkpoint))
    lines = ssc.textFileStream(str(indir))
    lines.filter(lambda line: "beta" not in line).saveAsTextFiles(str(out / "lines"))
    words = lines.flatMap(str.split).map(lambda w: (w, 1))
    words.reduceByKey(operator.add, 3).saveAsTextFiles(str(out / "counts"), "txt")
    lines.map(lambda line: (len(line), line)).mapValues(str.upper).saveAsTextFiles(
        str(out / "upper")
    )
    return ssc


def interval_dirs(out: Path) -> dict[str, Any]:
    """Every committed directory: its part files' names and content (with a reduce: each
    part file's lines sorted, since a reduce's order inside a partition is not fixed)."""
    result: dict[str, Any] = {}
    for d in sorted(out.iterdir()):
        if d.name.split("-")[0] not in OUTPUTS:
            continue
        assert (d / "_DSTREAM_COMMIT").exists() and (d / "_SUCCESS").exists(), d
        parts = sorted(d.glob("part-*"))
        if d.name.startswith("counts"):
            result[d.name] = [(p.name, sorted(p.read_bytes().splitlines())) for p in parts]
        else:  # the same lines in the same order; cut into part files by task
            result[d.name] = b"".join(p.read_bytes() for p in parts)
    return result


def staging_left(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if ".stretch-" in p.name)


class _KillAfter(StreamingListener):
    def __init__(self, n: int) -> None:
        self.left = n

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        self.left -= 1
        if self.left == 0:
            os.kill(os.getpid(), signal.SIGKILL)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("indir", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("begin_ms", type=int)
    p.add_argument("end_ms", type=int)
    p.add_argument("--kill-after", type=int, default=0)
    args = p.parse_args()
    from pyspark import SparkContext

    from dstream.sparkconf import recommended_conf

    conf = recommended_conf("local[2]", "replay-case").set("spark.ui.enabled", "false")
    sc = SparkContext(conf=conf)

    def setup() -> StreamingContext:
        ssc = stateless(sc, args.indir, args.out, 32)
        if args.kill_after:
            ssc.addStreamingListener(_KillAfter(args.kill_after))
        return ssc

    report = StreamingContext.replay(setup, Time(args.begin_ms), Time(args.end_ms))
    print(f"stretched {report.stretched} of {report.intervals}", flush=True)
    sc.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
