"""Where a tentative result's delay goes after an executor loss (issue #61, item 5), from
``testbed.tentative --timeline``: the program of ``bench/engine/tentative.py`` (a top-k over
``updateStateByKey`` and a join with a window state, 2 s intervals), two of three workers'
executors killed -9, and every Spark listener event of the run (jobs, stages, tasks with
their job groups; executors removed) next to the tentative controller's own log.

For the kill, when the driver heard of each executor's loss (``detect``) and when the
controller began the episode (``lookup``: the block manager asked, the estimate made). Then
for each interval whose tentative result came, the time from the later of its end and the
episode's start to its delivery, split by what was going on (a sweep over the events):

``controller``  no tentative job of the interval submitted yet: the controller thread was
                busy with earlier intervals' tentative results, or building this pass;
``queued``      a tentative job of the interval had a stage waiting and none of its tasks
                ran: every executor slot held by other work (``behind``: whose tasks held
                them meanwhile, task-ms by kind: the recovery's recomputation, the exact
                intervals' jobs, other intervals' tentative jobs);
``running``     a task of the interval's tentative jobs ran;
``driver``      the rest (between its jobs: collecting results, the output's own code).

    .venv/bin/python -m bench.engine.tentative_delay [--repeats 3] [--master URL]

Alone on the machine: every share is CPU contention on a small machine. Writes
bench/results/tentative-delay.json and prints one table per run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from itertools import pairwise
from typing import Any

from bench.engine.tentative import run
from bench.paper.faults import RESULTS

PHASES = ("controller", "queued", "running", "driver")


def kind_of(group: str | None, prefix: str) -> str:
    """What a job group is: the exact jobs of an interval, the recovery's recomputation, a
    tentative pass, or something else (checkpoints, the monitor's own jobs)."""
    if not group or not group.startswith(prefix):
        return "other"
    rest = group[len(prefix) :]
    if rest.startswith("-tentative-"):
        return "tentative"
    if rest.startswith("-recovery-"):
        return "recovery"
    if rest[1:].isdigit():
        return "exact"
    return "other"


def interval_of(group: str | None) -> int | None:
    """The interval (ms) a tentative job group is for."""
    if group and "-tentative-" in group:
        tail = group.rsplit("-", 1)[1]
        return int(tail) if tail.isdigit() else None
    return None


def breakdown(result: dict[str, Any], output: str = "top") -> dict[str, Any]:
    """The kill's detection and lookup, and per tentative interval of ``output`` its delay
    split into :data:`PHASES` (ms), with what held the slots while it was queued."""
    events = result["events"]
    prefix = result["group_prefix"]
    killed_at = result["killed_at_ms"]
    removed = sorted(e["time"] for e in events if e["type"] == "ExecutorRemoved")
    begun = [
        result["t0_ms"] + round(float(line.split("s ", 1)[0]) * 1000)
        for line in result["controller"]
        if "tentative results until" in line
    ]
    episode = begun[0] if begun else None
    # Task spans by job group; stage spans of the tentative jobs by interval.
    tasks: list[tuple[int, int, str | None]] = [
        (e["launch_time"], e["finish_time"], e["job_group"])
        for e in events
        if e["type"] == "TaskEnd"
    ]
    stages: dict[int, list[tuple[int, int]]] = defaultdict(list)  # interval -> stage spans
    jobs_from: dict[int, int] = {}  # interval -> first tentative job's start
    for e in events:
        t = interval_of(e.get("job_group"))
        if t is None:
            continue
        if e["type"] == "JobStart":
            jobs_from[t] = min(jobs_from.get(t, e["time"]), e["time"])
        elif e["type"] == "StageCompleted" and e["submission_time"] is not None:
            stages[t].append((e["submission_time"], e["completion_time"] or e["submission_time"]))
    rows = []
    for t_text, slot in sorted(result["outputs"][output].items(), key=lambda kv: int(kv[0])):
        if "tentative" not in slot or episode is None:
            continue
        t = int(t_text)
        start, end = max(t, episode), t + slot["tentative_after_ms"]
        mine = [(a, b) for a, b, g in tasks if interval_of(g) == t]
        phases = dict.fromkeys(PHASES, 0)
        behind: dict[str, int] = defaultdict(int)
        first_job = jobs_from.get(t, end)
        # Between two consecutive moments at which anything starts or ends, one phase.
        others = [(a, b, g) for a, b, g in tasks if interval_of(g) != t and a < end and b > start]
        cuts = {start, end, first_job}
        for a, b in [*mine, *stages.get(t, ()), *((a, b) for a, b, _ in others)]:
            cuts.update(x for x in (a, b) if start < x < end)
        edges = sorted(x for x in cuts if start <= x <= end)
        for lo, hi in pairwise(edges):
            if lo < first_job:
                phases["controller"] += hi - lo
            elif any(a <= lo < b for a, b in mine):
                phases["running"] += hi - lo
            elif any(a <= lo < b for a, b in stages.get(t, ())):
                phases["queued"] += hi - lo
                for a, b, g in others:
                    if a <= lo < b:
                        behind[kind_of(g, prefix)] += hi - lo
            else:
                phases["driver"] += hi - lo
        rows.append(
            {
                "time": t,
                "after_end_ms": slot["tentative_after_ms"],
                "from_ms": start - t,
                **phases,
                "behind_task_ms": dict(behind),
                "exact_after_ms": slot.get("exact_after_ms"),
            }
        )
    return {
        "detect_ms": [ms - killed_at for ms in removed if ms >= killed_at - 1000],
        "lookup_ms": None if episode is None or not removed else episode - removed[0],
        "episode_from_kill_ms": None if episode is None else episode - killed_at,
        "intervals": rows,
        "due": len(due(result, output)) if episode is not None else 0,
        # The controller's log (seconds from the run's start): each pass's own timing
        # (graph lock, built, states read back, outputs), drops, the episode's end.
        "controller_log": list(result["controller"]),
    }


def due(result: dict[str, Any], output: str = "top") -> list[int]:
    """The intervals due while the lost state was recomputed: those whose exact call of
    ``output`` began after the kill (one begun before it closed its interval to tentative
    results). On the wall clock, not the stream's: on a busy machine the stream lags, and
    an interval that ended before the kill may be computed after it."""
    killed_at = result["killed_at_ms"]
    slots = result["outputs"][output]
    return [
        int(t)
        for t, slot in slots.items()
        if "exact" in slot
        and int(t) + slot.get("exact_began_ms", slot["exact_after_ms"]) > killed_at
    ]


def show(b: dict[str, Any]) -> None:
    print(
        f"kill -> removed {b['detect_ms']} ms; removed -> episode {b['lookup_ms']} ms; "
        f"{len(b['intervals'])} of {b['due']} late intervals got a tentative result"
    )
    print("interval  after-end  from  " + "  ".join(f"{p:>10}" for p in PHASES) + "  behind")
    for r in b["intervals"]:
        cells = "  ".join(f"{r[p]:>10}" for p in PHASES)
        head = f"{r['time']}  {r['after_end_ms']:>9}  {r['from_ms']:>4}"
        print(f"{head}  {cells}  {r['behind_task_ms']}")
    for line in b.get("controller_log", ()):
        print(f"  {line[:200]}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--master", default=None, help="default: a standalone cluster started here")
    p.add_argument("--seconds", type=float, default=40)
    p.add_argument("--kill-at", type=float, default=16)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    if args.master is None:
        from testbed.standalone import StandaloneCluster

        with StandaloneCluster(workers=3, cores=1, memory_mb=1024) as cluster:
            return measure(cluster.master_url, args)
    return measure(args.master, args)


def measure(master: str, args: argparse.Namespace) -> int:
    runs = []
    for _ in range(args.repeats):
        r = run(
            master,
            *("--seconds", str(args.seconds), "--kill-at", str(args.kill_at), "--kill", "2"),
            "--timeline",
        )
        b = breakdown(r)
        show(b)
        runs.append(b)
    rows = [r for b in runs for r in b["intervals"]]
    columns = (*PHASES, "after_end_ms")
    summary = {p: statistics.median([r[p] for r in rows]) if rows else None for p in columns}
    print(f"medians over {len(rows)} tentative results: {summary}")
    path = RESULTS / "tentative-delay.json"
    path.write_text(json.dumps({"runs": runs, "medians": summary}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
