"""What a rescale of keyed state costs (SPATE's elastic slices on D-Streams): an
updateStateByKey word count on ``local-cluster`` (3 executors) in 4 partitions, doubled to 8
after interval ``--up`` and halved back after ``--down``, against the same run without
rescaling; then the same with an executor killed -9 two intervals after each rescale. Every
run's totals are checked against the run without rescaling before any time is reported.

Reports the median interval, each rescale interval's processing time and its ratio to the
median of the unrescaled run, and the failure intervals. With ``--breakdown``, also where
each rescale interval goes, stage by stage, against the same interval unrescaled and the
interval three on at the new count (testbed.breakdown: each stage's tasks, their summed run,
deserialization, GC and scheduler delay, shuffle bytes, locality; the driver's time outside
the stages; rescale()'s own preparation before the interval), medians over the runs.

    .venv/bin/python -m bench.engine.rescale
    .venv/bin/python -m bench.engine.rescale --executors 2 --repeats 5 --breakdown
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
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
    p.add_argument("--breakdown", action="store_true", help="per-stage breakdown (see above)")
    p.add_argument(
        "--paired",
        action="store_true",
        help="unrescaled and rescaled runs in turn in one process (a shared machine's load "
        "changes between processes); no run with kills",
    )
    p.add_argument(
        "--settle",
        type=float,
        default=0.0,
        help="seconds between rescale() and the rescale interval (testbed.faults "
        "--settle-after-rescale)",
    )
    p.add_argument(
        "--out", default=None, help="a name in bench/results or a path; default rescale[-Nx].json"
    )
    args = p.parse_args()
    common = dict(
        intervals=args.intervals,
        rate=args.rate,
        state_partitions=4,
        checkpoint=10,
        executors=args.executors,
    )
    flags = []
    if args.breakdown:  # the rescale intervals and three on (at the new count)
        flags = ["--breakdown"]
        for i in (args.up + 1, args.up + 4, args.down + 1, args.down + 4):
            flags += ["--breakdown-at", str(i)]
    rescales = [*flags, "--rescale", f"8@{args.up}", "--rescale", f"4@{args.down}"]
    if args.settle:
        rescales += ["--settle-after-rescale", str(args.settle)]
    if args.paired:
        # One process: unrescaled and rescaled runs in turn, each pair on the same executors
        # under the same load (runs() checks every run's totals against the first's).
        both = runs(
            "keyed", ["0"] * (2 * args.repeats), [*rescales, "--rescale-every-other"], **common
        )
        fixed, rescaled, killed = both[0::2], both[1::2], None
    else:
        fixed = runs("keyed", ["0"] * args.repeats, flags, **common)
        kills = ["--also-kill-at", str(args.down + 2)]
        moved = runs(
            "keyed", ["0"] * args.repeats + [f"1@{args.up + 2}"], [*rescales, *kills], **common
        )
        rescaled, killed = moved[:-1], moved[-1]
    for run in [*rescaled, *([] if killed is None else [killed])]:
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
                # --paired: each rescaled run against the unrescaled run just before it.
                "pair_ratios": [
                    round(series(r)[i - 1] / series(f)[i - 1], 2)
                    for f, r in zip(fixed, rescaled, strict=True)
                ],
                # Against an interval at the new count: the regroup's own cost.
                "ratio_to_three_later": round(median_at(rescaled, i) / after, 2),
                "with_kills_ms": None if killed is None else series(killed)[i - 1],
            }
        )
    lines = {"no rescale": series(fixed[0]), "rescaled": series(rescaled[0])}
    if killed is not None:
        lines[f"rescaled, killed at {args.up + 2} and {args.down + 2}"] = series(killed)
    suffix = "" if args.executors == 3 else f"-{args.executors}x"
    if args.paired:
        suffix += "-paired"
    # --out: a file name in bench/results, or a path (the plot beside it, same stem).
    name = args.out or f"rescale{suffix}.json"
    out = Path(name) if "/" in name else RESULTS / name
    out.parent.mkdir(parents=True, exist_ok=True)
    plot(
        out.with_suffix(".png"),
        f"keyed WordCount: 4 -> 8 after {args.up}, 8 -> 4 after {args.down}",
        lines,
        at["4 -> 8"],
    )
    result = {
        "executors": args.executors,
        "rows": rows,
        "paired": args.paired,
        "killed_series": None if killed is None else series(killed),
        "fixed_series": series(fixed[0]),
    }
    if args.breakdown:
        result["breakdown"] = {
            name: {
                "unrescaled": stage_medians([r["breakdown"][str(i * 1000)] for r in fixed]),
                "rescale_interval": stage_medians(
                    [r["breakdown"][str(i * 1000)] for r in rescaled]
                ),
                "three_later": stage_medians(
                    [r["breakdown"][str((i + 3) * 1000)] for r in rescaled]
                ),
                "per_run": {
                    "unrescaled": [r["breakdown"][str(i * 1000)] for r in fixed],
                    "rescale_interval": [r["breakdown"][str(i * 1000)] for r in rescaled],
                },
            }
            for name, i in at.items()
        }
    out.write_text(json.dumps(result, indent=1) + "\n")
    if args.breakdown:
        for rescale, b in result["breakdown"].items():
            print(f"\n{rescale}, interval {at[rescale]}: medians over the runs\n")
            print(breakdown_table(b))
    print(
        "| rescale | interval | without rescale (median) | rescale interval (median) | "
        "each run | ratio | 3 intervals later | ratio to it | with kills |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(
            f"| {r['rescale']} | {r['interval']} | {r['unrescaled_ms']:.0f} ms | "
            f"{r['rescale_interval_ms']:.0f} ms | {r['each_ms']} | {r['ratio']} | "
            f"{r['three_later_ms']:.0f} ms | {r['ratio_to_three_later']} | "
            f"{r['with_kills_ms']} ms |"
        )
    if killed is None:
        return 0
    k = series(killed)
    print(
        f"failure intervals (kills at {args.up + 2}, {args.down + 2}): "
        f"{k[args.up + 1]} ms, {k[args.down + 1]} ms"
    )
    return 0


# The per-stage columns of the breakdown (testbed.breakdown's names).
COLUMNS = (
    ("tasks", "tasks"),
    ("wall_ms", "wall"),
    ("executorRunTime", "run (sum)"),
    ("executorDeserializeTime", "deser. (sum)"),
    ("schedulerDelay", "sched. delay (sum)"),
    ("jvmGcTime", "GC (sum)"),
    ("max_task_ms", "longest task"),
    ("shuffle_read_bytes", "shuffle read B"),
    ("shuffle_remote_read_bytes", "remote B"),
    ("shuffle_write_bytes", "shuffle write B"),
)


def stage_medians(intervals: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over runs of one interval's breakdown: its totals, and each stage's columns
    (stages matched by their place in the interval and their name)."""

    def med(xs: list[float]) -> float:
        return round(statistics.median(xs), 1) if xs else float("nan")

    shapes: dict[tuple[int, str, str], list[dict[str, Any]]] = {}
    for b in intervals:
        for place, st in enumerate(b.get("stages", [])):
            shapes.setdefault((place, st["kind"], st["name"]), []).append(st)
    stages = []
    for (place, kind, name), rows in sorted(shapes.items()):
        row: dict[str, Any] = {"place": place, "kind": kind, "name": name, "runs": len(rows)}
        for key, _ in COLUMNS:
            row[key] = med([r[key] for r in rows if r.get(key) is not None])
        locality: dict[str, int] = {}
        for r in rows:
            for where, n in r["locality"].items():
                locality[where] = locality.get(where, 0) + n
        row["locality_all_runs"] = locality
        stages.append(row)
    return {
        "wall_ms": med([b["wall_ms"] for b in intervals if "wall_ms" in b]),
        "stages_ms": med([b["stages_ms"] for b in intervals if "stages_ms" in b]),
        "outside_stages_ms": med(
            [b["outside_stages_ms"] for b in intervals if "outside_stages_ms" in b]
        ),
        "rescale_prepare_ms": med(
            [b["rescale_prepare_ms"] for b in intervals if "rescale_prepare_ms" in b]
        ),
        "stages": stages,
    }


def breakdown_table(b: dict[str, Any]) -> str:
    head = ["interval", "stage", *(label for _, label in COLUMNS), "locality (all runs)"]
    out = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for label, key in (
        ("unrescaled", "unrescaled"),
        ("rescale", "rescale_interval"),
        ("3 later", "three_later"),
    ):
        m = b[key]
        out.append(
            f"| {label} | total {m['wall_ms']:.0f} ms: stages {m['stages_ms']:.0f}, outside "
            f"{m['outside_stages_ms']:.0f}, rescale() before {m['rescale_prepare_ms']} |"
            + " |"
            * (len(head) - 2)
        )
        for st in m["stages"]:
            cells = [f"{st[k]:.0f}" for k, _ in COLUMNS]
            where = ", ".join(f"{k} {v}" for k, v in st["locality_all_runs"].items())
            name = f"{st['place']}: {st['name']}" + (
                "" if st["kind"] == "interval" else f" ({st['kind']})"
            )
            out.append(f"| {label} | {name} | " + " | ".join(cells) + f" | {where} |")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
