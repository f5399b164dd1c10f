"""What a rescale of keyed state costs (SPATE's elastic slices on D-Streams): an
updateStateByKey word count on ``local-cluster`` (3 executors) in 4 partitions, doubled to 8
after interval ``--up`` and halved back after ``--down``, against the same run without
rescaling; then the same with an executor killed -9 two intervals after each rescale. Every
run's totals are checked against the run without rescaling before any time is reported.

Reports the median interval, each rescale interval's processing time and its ratio to the
median of the unrescaled run, and the failure intervals.

    .venv/bin/python -m bench.engine.rescale
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from typing import Any

from bench.paper.faults import RESULTS, plot, runs, series


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--intervals", type=int, default=50)
    p.add_argument("--up", type=int, default=24, help="rescale 4 -> 8 after this interval")
    p.add_argument("--down", type=int, default=36, help="rescale 8 -> 4 after this interval")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--rate", type=int, default=2000)
    p.add_argument("--executors", type=int, default=3, help="local-cluster's executors")
    args = p.parse_args()
    common = dict(
        intervals=args.intervals,
        rate=args.rate,
        state_partitions=4,
        checkpoint=10,
        executors=args.executors,
    )
    fixed = runs("keyed", ["0"] * args.repeats, **common)
    rescales = ["--rescale", f"8@{args.up}", "--rescale", f"4@{args.down}"]
    kills = ["--also-kill-at", str(args.down + 2)]
    moved = runs(
        "keyed", ["0"] * args.repeats + [f"1@{args.up + 2}"], [*rescales, *kills], **common
    )
    rescaled, killed = moved[:-1], moved[-1]
    for run in moved:
        if run["outputs"] != fixed[0]["outputs"]:
            raise RuntimeError(f"run {run['kill']} with rescales changed the totals")
    at = {"4 -> 8": args.up + 1, "8 -> 4": args.down + 1}

    def median_at(group: list[dict[str, Any]], i: int) -> float:
        return statistics.median(series(r)[i - 1] for r in group)

    rows = []
    for name, i in at.items():
        base = median_at(fixed, i)
        after = median_at(rescaled, i + 3)  # three intervals on, at the new count
        rows.append(
            {
                "rescale": name,
                "interval": i,
                "unrescaled_ms": base,
                "rescale_interval_ms": median_at(rescaled, i),
                "each_ms": [series(r)[i - 1] for r in rescaled],
                "ratio": round(median_at(rescaled, i) / base, 2),
                "three_later_ms": after,
                "with_kills_ms": series(killed)[i - 1],
            }
        )
    plot(
        RESULTS / ("rescale.png" if args.executors == 3 else f"rescale-{args.executors}x.png"),
        f"keyed WordCount: 4 -> 8 after {args.up}, 8 -> 4 after {args.down}",
        {
            "no rescale": series(fixed[0]),
            "rescaled": series(rescaled[0]),
            f"rescaled, killed at {args.up + 2} and {args.down + 2}": series(killed),
        },
        at["4 -> 8"],
    )
    result = {
        "executors": args.executors,
        "rows": rows,
        "killed_series": series(killed),
        "fixed_series": series(fixed[0]),
    }
    name = "rescale.json" if args.executors == 3 else f"rescale-{args.executors}x.json"
    (RESULTS / name).write_text(json.dumps(result, indent=1) + "\n")
    print(
        "| rescale | interval | without rescale (median) | rescale interval (median) | "
        "each run | ratio | 3 intervals later | with kills |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(
            f"| {r['rescale']} | {r['interval']} | {r['unrescaled_ms']:.0f} ms | "
            f"{r['rescale_interval_ms']:.0f} ms | {r['each_ms']} | {r['ratio']} | "
            f"{r['three_later_ms']:.0f} ms | {r['with_kills_ms']} ms |"
        )
    k = series(killed)
    print(
        f"failure intervals (kills at {args.up + 2}, {args.down + 2}): "
        f"{k[args.up + 1]} ms, {k[args.down + 1]} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
