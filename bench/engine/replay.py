"""Replay throughput against a live run of the same data (issue 15).

A generator writes --intervals files of --records-per-interval 100-byte lines, one per
second; a live run (1 s intervals, word counts over a 30 s window with an inverse and running
totals, saved as text) reads them as they arrive, and the bench waits until the live run has
completed the interval of the last file. Then the same program is replayed over the same
files with StreamingContext.replay at full speed. Reports records/s of both (live: records
over the time from the first file to the completion of the last file's interval, which is
the arrival rate if the program keeps up and its capacity if it does not; replay: records
over the replay's time), the live run's median processing time, and whether both committed
the same outputs interval by interval (with the intervals that differ). With several
--stretch values the replay runs --rounds times for each (alternating, each into its own
output directory), reported as the median and every round. Writes
bench/results/replay.json.

    .venv/bin/python -m bench.engine.replay --intervals 60 --records-per-interval 20000
    .venv/bin/python -m bench.engine.replay --program light --intervals 30 \
        --records-per-interval 2000 --stretch 1 32 --rounds 3
    .venv/bin/python -m bench.engine.replay --smoke
"""

from __future__ import annotations

import argparse
import json
import operator
import os
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common.spark import spark_context
from dstream import Duration, StreamingContext, StreamingListener, StreamingSettings, Time
from dstream.sources.textgen import generate_lines

BATCH = Duration(1000)


def program(
    sc: Any, indir: str, out: str, kind: str = "window", depth: int = 1, stretch: int = 32
) -> StreamingContext:
    """``window``: word counts over a 30 s window with an inverse and running totals;
    ``light``: each interval's lines counted by first letter (stateless, one output; a
    replay runs it ``stretch`` intervals per job, StreamingSettings.replay_stretch)."""
    settings = StreamingSettings(pipelining_depth=depth, replay_stretch=stretch)
    ssc = StreamingContext(sc, BATCH, settings=settings)
    ssc.checkpoint(f"{out}/ckpt")
    lines = ssc.textFileStream(indir)
    if kind == "light":
        counts = lines.map(lambda line: (line[:1], 1)).reduceByKey(operator.add)
        counts.saveAsTextFiles(f"{out}/counts")
        return ssc
    pairs = lines.flatMap(str.split).map(lambda w: (w, 1))
    pairs.reduceByKeyAndWindow(operator.add, operator.sub, 30).saveAsTextFiles(f"{out}/window")
    pairs.updateStateByKey(lambda new, old: sum(new) + (old or 0)).saveAsTextFiles(f"{out}/totals")
    return ssc


def outputs(out: str) -> dict[str, list[str]]:
    result = {}
    for d in sorted(Path(out).iterdir()):
        if d.name.startswith(("window-", "totals-", "counts-")) and d.is_dir():
            result[d.name] = sorted(
                line for part in d.glob("part-*") for line in part.read_text().splitlines()
            )
    return result


def differing(live: dict[str, list[str]], replay: dict[str, list[str]]) -> list[str]:
    """The replay's intervals whose outputs are not the live run's (which also ran before
    and after the replayed span), with "(missing live)" where the live run has none."""
    return [
        name if name in live else f"{name} (missing live)"
        for name, lines in sorted(replay.items())
        if live.get(name) != lines
    ]


class Processing(StreamingListener):
    def __init__(self) -> None:
        self.ms: list[int] = []

    def onBatchCompleted(self, batchCompleted: Any) -> None:
        self.ms.append(batchCompleted.batchInfo().processingDelay())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--intervals", type=int, default=60)
    p.add_argument("--records-per-interval", type=int, default=50_000)
    p.add_argument("--program", choices=("window", "light"), default="window")
    p.add_argument("--pipelining", type=int, default=1, help="the replay's pipelining_depth")
    p.add_argument(
        "--stretch", type=int, nargs="+", default=[32], help="the replay's replay_stretch values"
    )
    p.add_argument("--rounds", type=int, default=1, help="replays per --stretch value")
    p.add_argument("--smoke", action="store_true")
    p.add_argument(
        "--out", default=str(Path(__file__).resolve().parents[1] / "results" / "replay.json")
    )
    args = p.parse_args()
    if args.smoke:
        args.intervals, args.records_per_interval = 4, 200
    work = Path(tempfile.mkdtemp(prefix="dstream-bench-replay-"))
    indir = work / "in"
    indir.mkdir()
    sc = spark_context("dstream-bench-replay")
    live = program(sc, str(indir), str(work / "live"), args.program)
    processing = Processing()
    live.addStreamingListener(processing)
    live.start()
    begin = Time(int(time.time() * 1000))
    pause = threading.Event()
    for i in range(args.intervals):
        lines = generate_lines(i, args.records_per_interval, 100)
        hidden = indir / f".f{i:05d}"
        hidden.write_text("\n".join(lines) + "\n")
        os.rename(hidden, indir / f"f{i:05d}.txt")
        pause.wait(1.0)
    end = Time(int(time.time() * 1000))
    if not live.wait_for_batch(end.floor(BATCH) + BATCH, timeout_s=30.0 * args.intervals):
        raise SystemExit("the live run did not complete the last file's interval in time")
    live_s = time.time() - begin.ms / 1000
    live.stop(stopSparkContext=False, stopGraceFully=True)
    records = args.intervals * args.records_per_interval
    live_rate = records / live_s
    result: dict[str, Any] = {
        "program": args.program,
        "pipelining_depth": args.pipelining,
        "intervals": args.intervals,
        "records": records,
        "live_records_per_s": round(live_rate, 1),
        "live_processing_ms_median": statistics.median(processing.ms),
        "replays": {},
    }
    live_outputs = outputs(str(work / "live"))
    rounds: dict[int, list[Any]] = {k: [] for k in args.stretch}
    for r in range(args.rounds):
        for k in args.stretch:
            out = work / f"replay-s{k}-r{r}"
            report = StreamingContext.replay(
                lambda out=out, k=k: program(
                    sc, str(indir), str(out), args.program, args.pipelining, k
                ),
                begin,
                end,
            )
            replayed = outputs(str(out))
            diff = differing(live_outputs, replayed)
            rounds[k].append((report, len(replayed), diff))
    for k, runs in rounds.items():
        seconds = [report.seconds for report, _, _ in runs]
        median = statistics.median(seconds)
        diffs = [d for _, _, diff in runs for d in diff]
        result["replays"][f"stretch={k}"] = {
            "replay_seconds_median": round(median, 2),
            "replay_seconds": [round(s, 2) for s in seconds],
            "replay_records_per_s": round(records / median, 1),
            "speedup": round(records / median / live_rate, 2),
            "stretched_intervals": [report.stretched for report, _, _ in runs],
            "replayed_output_dirs": [n for _, n, _ in runs],
            "same_outputs": not diffs and all(n for _, n, _ in runs),
            "differing": diffs[:10],
        }
    print(json.dumps(result, indent=2))
    sc.stop()
    if not args.smoke:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
