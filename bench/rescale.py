"""What a rescale of keyed state costs (SPATE's elastic slices on D-Streams): an
updateStateByKey word count on ``local-cluster`` (3 executors) in 4 partitions, doubled to 8
after interval ``--up`` and halved back after ``--down``, against the same run without
rescaling; then the same with an executor killed -9 two intervals after each rescale. Every
run's totals are checked against the run without rescaling before any time is reported.

Reports the median interval, each rescale interval's processing time and its ratio to the
median of the unrescaled run, and the failure intervals.

    .venv/bin/python bench/rescale.py
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from faults import RESULTS, plot, runs, series


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--intervals", type=int, default=50)
    p.add_argument("--up", type=int, default=20, help="rescale 4 -> 8 after this interval")
    p.add_argument("--down", type=int, default=35, help="rescale 8 -> 4 after this interval")
    p.add_argument("--rate", type=int, default=2000)
    args = p.parse_args()
    common = dict(intervals=args.intervals, rate=args.rate, state_partitions=4, checkpoint=10)
    fixed = runs("keyed", ["0"], **common)[0]
    rescales = ["--rescale", f"8@{args.up}", "--rescale", f"4@{args.down}"]
    kills = ["--also-kill-at", str(args.down + 2)]
    rescaled, killed = runs("keyed", ["0", f"1@{args.up + 2}"], [*rescales, *kills], **common)
    for run in (rescaled, killed):
        if run["outputs"] != fixed["outputs"]:
            raise RuntimeError(f"run {run['kill']} with rescales changed the totals")
    base = statistics.median(series(fixed)[5:])
    at = {"4 -> 8": args.up + 1, "8 -> 4": args.down + 1}
    rows = []
    for label, run in (("no rescale", fixed), ("rescaled", rescaled), ("rescaled + kills", killed)):
        s = series(run)
        row = {"run": label, "median_ms": statistics.median(s[5:])}
        if run is not fixed:
            for name, i in at.items():
                row[name] = s[i - 1]
                row[f"{name} ratio"] = round(s[i - 1] / base, 2)
        if run is killed:
            row["failures_ms"] = [s[args.up + 1], s[args.down + 1]]
        rows.append(row)
    plot(
        RESULTS / "rescale.png",
        f"keyed WordCount: 4 -> 8 after {args.up}, 8 -> 4 after {args.down}",
        {
            r: series(run)
            for r, run in (
                ("no rescale", fixed),
                ("rescaled", rescaled),
                ("rescaled + kills", killed),
            )
        },
        at["4 -> 8"],
    )
    (RESULTS / "rescale.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(
        "| run | median interval | 4 -> 8 interval | ratio | 8 -> 4 interval | ratio | "
        "failure intervals |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        up, down = r.get("4 -> 8"), r.get("8 -> 4")
        print(
            f"| {r['run']} | {r['median_ms']:.0f} ms | "
            + (
                f"{up} ms | {r['4 -> 8 ratio']} | {down} ms | {r['8 -> 4 ratio']} | "
                if up
                else "- | - | - | - | "
            )
            + (f"{r['failures_ms']} ms |" if "failures_ms" in r else "- |")
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
