"""Interval processing time around a real executor failure, on ``local-cluster`` (executor
JVMs killed with SIGKILL mid-interval). Reproduces, on this machine, the paper's

* Figure 7: parallel recovery against a single-task baseline at several loads;
* Figure 10: WordCount (30 s window, inverse, checkpoints every 10 s) and Grep, before,
  during and after one failure and two simultaneous failures;
* Figure 11: WordCount with checkpoint intervals of 2, 10 and 30 s;
* Figure 12: WordCount recovering on 2 against 4 executors.

Every run is a ``python -m testbed.faults`` process on a ManualClock (intervals back
to back, so an interval's processing time is its own work, not waiting). The outputs of the
faulty runs are checked against the run without failures before any time is reported.

    .venv/bin/python -m bench.paper.faults --figures 7 10 11 12
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # testbed, when run as a script
RESULTS = Path(__file__).resolve().parents[1] / "results"


def runs(
    workload: str, kills: list[str], extra: tuple[str, ...] | list[str] = (), **options: Any
) -> list[dict[str, Any]]:
    args = [sys.executable, "-m", "testbed.faults", workload, *extra]
    for key, value in options.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    for kill in kills:
        args += ["--kill", kill]
    proc = subprocess.run(args, check=False, capture_output=True, text=True, timeout=3600, cwd=ROOT)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    result = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    reference = next(r for r in result if r["kill"] == [0, 0])
    for r in result:
        if r["outputs"] != reference["outputs"]:
            raise RuntimeError(f"run {r['kill']} of {workload} changed the output")
    return result


def series(run: dict[str, Any]) -> list[int]:
    return [run["processing_ms"][t] for t in sorted(run["processing_ms"], key=int)]


def summary(run: dict[str, Any], at: int, warmup: int) -> dict[str, float]:
    s = series(run)
    before = s[warmup : at - 1] if at else s[warmup:]
    return {
        "before_ms": statistics.median(before),
        "failure_ms": s[at - 1] if at else float("nan"),
        "next_ms": s[at] if at and at < len(s) else float("nan"),
        "after_ms": statistics.median(s[at + 1 :]) if at else float("nan"),
    }


def plot(path: Path, title: str, lines: dict[str, list[int]], at: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    for label, values in lines.items():
        ax.plot(range(1, len(values) + 1), values, marker=".", label=label)
    if at:
        ax.axvline(at, color="grey", linestyle="--", linewidth=1)
    ax.set_xlabel("interval (1 s each)")
    ax.set_ylabel("processing time (ms)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def table(rows: list[tuple[str, dict[str, float]]]) -> str:
    out = ["| run | before (median) | failure interval | next | after (median) |"]
    out.append("| --- | --- | --- | --- | --- |")
    for label, s in rows:
        out.append(
            f"| {label} | {s['before_ms']:.0f} ms | {s['failure_ms']:.0f} ms | "
            f"{s['next_ms']:.0f} ms | {s['after_ms']:.0f} ms |"
        )
    return "\n".join(out)


def figure10(args: argparse.Namespace) -> str:
    report = []
    for workload, intervals, at in (("wordcount", args.intervals, 35), ("grep", 30, 15)):
        result = runs(workload, ["0", f"1@{at}", f"2@{at}"], intervals=intervals, rate=args.rate)
        labels = ["no failure", "1 executor killed", "2 executors killed"]
        plot(
            RESULTS / f"fig10-{workload}.png",
            f"{workload}: executor JVMs killed at interval {at} (3 executors)",
            {label: series(r) for label, r in zip(labels, result, strict=True)},
            at,
        )
        rows = [(label, summary(r, at, 5)) for label, r in zip(labels, result, strict=True)]
        report.append(f"{workload}, kill at interval {at}:\n\n{table(rows)}\n")
        save(f"fig10-{workload}", result)
    return "\n".join(report)


def figure11(args: argparse.Namespace) -> str:
    at, lines, rows = 59, {}, []
    for ckpt in (2, 10, 30):
        result = runs("wordcount", ["0", f"1@{at}"], intervals=70, rate=args.rate, checkpoint=ckpt)
        label = f"checkpoint every {ckpt} s"
        lines[f"{label}, no failure"] = series(result[0])
        lines[f"{label}, 1 killed"] = series(result[1])
        rows.append((f"{label}, no failure", summary(result[0], at, 35)))
        rows.append((f"{label}, 1 executor killed", summary(result[1], at, 35)))
        save(f"fig11-ckpt{ckpt}", result)
    plot(RESULTS / "fig11.png", f"wordcount: checkpoint interval, kill at {at}", lines, at)
    return f"wordcount, kill at interval {at}:\n\n{table(rows)}\n"


def figure12(args: argparse.Namespace) -> str:
    at, lines, rows = 35, {}, []
    for executors, mb in ((2, 768), (4, 512)):
        result = runs(
            "wordcount",
            ["0", f"1@{at}"],
            intervals=args.intervals,
            rate=args.rate,
            executors=executors,
            executor_mb=mb,
        )
        lines[f"{executors} executors, 1 killed"] = series(result[1])
        rows.append((f"{executors} executors, no failure", summary(result[0], at, 5)))
        rows.append((f"{executors} executors, 1 killed", summary(result[1], at, 5)))
        save(f"fig12-{executors}", result)
    plot(RESULTS / "fig12.png", f"wordcount: recovery on 2 vs 4 executors, kill at {at}", lines, at)
    return f"wordcount, kill at interval {at}:\n\n{table(rows)}\n"


def figure7(args: argparse.Namespace) -> str:
    """Parallel recovery against a single-task baseline, at several loads.

    The paper's Figure 7 compares a node's lost state rebuilt in parallel by the whole
    cluster with the same state replayed by one backup node (upstream backup). Here both are
    WordCount on 3 executors, and the executor holding the latest window state is killed
    with SIGKILL 5 intervals after a checkpoint, so that state is recomputed from lineage:

    * parallel: load L in 6 input and 6 state partitions over the 3 executors; the killed
      executor's share (a third of the state) is recomputed as one task per lost partition,
      run side by side on the surviving executors and the replacement;
    * single task: the same share — load L/3, one executor's worth — in 1 partition,
      recomputed by one task, as a backup node would replay it alone.

    "Lost" is the wall time the failure cost: the sum, over the failure interval and every
    later one, of its time above the median before the failure (intervals run back to back
    on a ManualClock).
    """
    at, intervals, rows, lines = 25, 32, [], {}
    out = ["| load (records/s) | recovery | records/s per partition | interval before | "]
    out[0] += "failure interval | lost |"
    out.append("| --- | --- | --- | --- | --- | --- |")
    for load in args.loads:
        for label, partitions, rate in (
            ("parallel", 6, load),
            ("single task", 1, load // 3),
        ):
            result = runs(
                "wordcount",
                ["0", f"1@{at}"],
                intervals=intervals,
                rate=rate,
                partitions=partitions,
                state_partitions=partitions,
                kill_target="state",
            )
            s = series(result[1])
            before = statistics.median(s[5 : at - 1])
            lost = sum(max(0.0, v - before) for v in s[at - 1 :])
            rows.append({"load": load, "config": label, "before_ms": before, "lost_ms": lost})
            lines[f"{load}/s, {label}"] = s
            out.append(
                f"| {load} | {label} | {rate // partitions} | {before:.0f} ms | "
                f"{s[at - 1]:.0f} ms | {lost / 1000:.1f} s |"
            )
            save(f"fig7-{load}-{partitions}", result)
    # Loads measured in earlier runs stay (one more load point is one more command).
    path = RESULTS / "fig7.json"
    earlier = json.loads(path.read_text()) if path.exists() else []
    rows += [r for r in earlier if r["load"] not in args.loads]
    rows.sort(key=lambda r: (r["load"], r["config"]))
    path.write_text(json.dumps(rows, indent=1) + "\n")
    plot_fig7(RESULTS / "fig7.png", rows)
    name = "-".join(str(load) for load in args.loads)
    plot(RESULTS / f"fig7-series-{name}.png", f"wordcount: state holder killed at {at}", lines, at)
    return f"wordcount, the state's executor killed at interval {at}:\n\n" + "\n".join(out)


# Spark's defaults for what dstream.sparkconf.RECOMMENDED sets about lost executors.
SPARK_DEFAULTS = [
    "spark.shuffle.io.retryWait=5s",
    "spark.shuffle.io.maxRetries=3",
    "spark.locality.wait=3s",
]


def loss(args: argparse.Namespace) -> str:
    """Issue 18's goal 3: what one lost executor costs WordCount, repeated.

    WordCount (30 s window with the inverse, checkpoints every 10 s) on three executors, one
    killed 0.2 s into interval 35, ``--repeat`` times in each of three settings:

    * local-cluster with Spark's defaults for shuffle-fetch retries (3, 5 s apart) and
      locality wait (3 s);
    * local-cluster with dstream's recommended settings (one retry after 200 ms, 200 ms);
    * a standalone cluster whose Worker dies with its executor (a lost machine), dstream's
      settings: nothing replaces it, so no replacement JVM starts on this machine's two
      cores during recovery;
    * the last two again with two copies of the state in memory
      (``StreamingSettings.state_replicas = 2``): the lost state is read from its copy
      instead of recomputed through the intervals since the checkpoint.

    Reported per run: the failure interval, and the time lost — over the failure interval
    and the 10 after it, the time above the normal interval (the median of the run without
    failure): where the kill lands in the interval decides which of them pays.
    """
    at = 35
    kills = ["0"] + [f"1@{at}"] * args.repeat
    options = {"intervals": args.intervals, "rate": args.rate}
    defaults = [a for c in SPARK_DEFAULTS for a in ("--conf", c)]
    configs = {
        "local-cluster, Spark's defaults": runs("wordcount", kills, extra=defaults, **options),
    }
    from testbed.standalone import StandaloneCluster

    for replicas in (1, 2):
        copies = ", two copies of the state" if replicas == 2 else ""
        state = {**options, "state_replicas": replicas}
        configs[f"local-cluster, dstream's settings{copies}"] = runs("wordcount", kills, **state)
        node: list[dict[str, Any]] = []
        for _ in range(args.repeat):
            with StandaloneCluster(workers=3, cores=1, memory_mb=1024) as cluster:
                extra = ["--master", cluster.master_url, "--kill-node"]
                result = runs("wordcount", ["0", f"1@{at}"], extra=extra, **state)
            node += result if not node else result[1:]
        configs[f"standalone, a node lost (Worker and executor){copies}"] = node
    out = [
        "| run | normal interval | failure interval (each run) | time lost (each run) | "
        "lost / normal (median) | after (median) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    rows, lines = [], {}
    for label, result in configs.items():
        reference, faulty = result[0], result[1:]
        normal = statistics.median(series(reference)[5:])
        failure = [series(r)[at - 1] for r in faulty]
        lost = [sum(max(0.0, v - normal) for v in series(r)[at - 1 : at + 10]) for r in faulty]
        after = [statistics.median(series(r)[at + 10 :]) for r in faulty]
        out.append(
            f"| {label} | {normal:.0f} ms | {', '.join(f'{f}' for f in failure)} ms | "
            f"{', '.join(f'{v / 1000:.1f}' for v in lost)} s | "
            f"{statistics.median(lost) / normal:.1f}x | {statistics.median(after):.0f} ms |"
        )
        rows.append(
            {
                "config": label,
                "normal_ms": normal,
                "failure_ms": failure,
                "lost_ms": lost,
                "after_ms": after,
                "series": [series(r) for r in result],
            }
        )
        lines[label] = series(faulty[0])
    (RESULTS / "loss.json").write_text(json.dumps(rows, indent=1) + "\n")
    plot(RESULTS / "loss.png", f"wordcount: one executor lost at interval {at}", lines, at)
    return f"wordcount, one executor of three lost at interval {at}:\n\n" + "\n".join(out)


def plot_fig7(path: Path, rows: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for config in dict.fromkeys(r["config"] for r in rows):
        mine = [r for r in rows if r["config"] == config]
        ax.plot(
            [r["load"] for r in mine], [r["lost_ms"] / 1000 for r in mine], marker="o", label=config
        )
    ax.set_xlabel("load before the failure (records/s)")
    ax.set_ylabel("time lost to the failure (s)")
    ax.set_title("Recovery: parallel vs single task (Fig. 7)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def save(name: str, result: list[dict[str, Any]]) -> None:
    slim = [{k: v for k, v in r.items() if k != "outputs"} for r in result]
    (RESULTS / f"{name}.json").write_text(json.dumps(slim, indent=1) + "\n")


FIGURES = {"7": figure7, "10": figure10, "11": figure11, "12": figure12, "loss": loss}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--figures", nargs="+", choices=sorted(FIGURES), default=sorted(FIGURES))
    p.add_argument("--rate", type=int, default=2000, help="records per second")
    p.add_argument("--intervals", type=int, default=50)
    p.add_argument("--loads", type=int, nargs="+", default=[1500, 3000, 6000], help="Fig. 7")
    p.add_argument("--repeat", type=int, default=3, help="loss: failures per setting")
    args = p.parse_args()
    RESULTS.mkdir(exist_ok=True)
    for figure in args.figures:
        print(f"## Figure {figure}\n\n{FIGURES[figure](args)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
