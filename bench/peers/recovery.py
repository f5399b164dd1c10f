"""Figure 3 of the peers harness (#62): kill -9 of the process holding the state mid-run, the
keyed running total over ``--keys`` keys (100k by default) at ``--recovery-rate``.

What is killed, per system, and how it comes back:

- dstream on ``local-cluster[2,1,1024]`` (``--recovery-master``): one executor JVM (it holds
  half of the state's partitions); the driver goes on, Spark starts a replacement, the lost
  partitions are recomputed from the last state checkpoint and the intervals since;
- PyFlink (DataStream, SQL): the program's whole process group — the local mini cluster is one
  JVM, so its TaskManager is the JobManager's process — then the program started again from
  the newest retained checkpoint (``execution.state-recovery.path``), replaying the directory
  from the source's checkpointed position;
- Bytewax: the process (its workers are threads of it), started again on the same recovery
  directory: it resumes from the last epoch's snapshot;
- real-time mode (``local[4]``: the driver's JVM runs the tasks): the program's process
  group, started again on the same checkpoint location and topics (its feeder journals the
  files it has produced into Kafka, so the input is not produced twice).

Measured: the time from the kill until results are on schedule again — the arrival of the first
output line after which every line's latency is within the bound — and, once the input has
stopped and the outputs drained, every key's total against the oracle: exact, lost (below) or
doubled (above; totals are upserts, so a replay that prints a total again does not count).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

from bench.peers.harness import (
    ROOT,
    SYSTEMS,
    Input,
    Running,
    System,
    now_ms,
    versions,
    work_dir,
)
from bench.peers.outputs import Output, fold, judge, latency_summary, percentile
from bench.peers.records import Pool, oracle

__all__ = ["back_on_schedule", "latency_timeline", "recovery_figure"]


def back_on_schedule(outputs: list[Output], killed_ms: int, bound_ms: int) -> int | None:
    """Arrival time of the first line after ``killed_ms`` from which on every line arrived
    within ``bound_ms`` of its newest event time; None if the run never got there."""
    after = sorted((o for o in outputs if o.arrived >= killed_ms), key=lambda o: o.arrived)
    since: int | None = None
    for o in after:
        if o.arrived - o.ts > bound_ms:
            since = None
        elif since is None:
            since = o.arrived
    return since


def latency_timeline(
    outputs: list[Output], killed_ms: int, step_ms: int = 5000, before_ms: int = 10_000
) -> list[dict[str, Any]]:
    """p95 end-to-end latency of the lines that arrived in each ``step_ms`` from
    ``before_ms`` before the kill to the last line: how far behind a system fell and when it
    came back, where :func:`back_on_schedule` gives only the moment (or None, when a system
    was at the bound before the kill too)."""
    rows: dict[int, list[int]] = {}
    for o in outputs:
        if o.arrived >= killed_ms - before_ms:
            rows.setdefault((o.arrived - killed_ms) // step_ms, []).append(o.arrived - o.ts)
    return [
        {
            "from_s": k * step_ms / 1000,
            "lines": len(v),
            "p95_ms": percentile(v, 95),
            "max_ms": max(v),
        }
        for k, v in sorted(rows.items())
    ]


def executors(session: int) -> list[int]:
    """Pids of the Spark executor JVMs in process session ``session``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[3]) == session and b"CoarseGrainedExecutorBackend" in cmd:
            found.append(int(entry))
    return sorted(found)


def newest_checkpoint(directory: Path) -> Path | None:
    """Flink's newest complete checkpoint under ``directory`` (``<job>/chk-N/_metadata``)."""
    done = sorted(
        directory.glob("*/chk-*/_metadata"), key=lambda p: int(p.parent.name.split("-")[1])
    )
    return done[-1].parent if done else None


def recover_one(args: argparse.Namespace, system: System) -> dict[str, Any]:
    pool = Pool(args.pool_records, args.keys, args.pool_cache)
    work = work_dir(args.work_root)
    (work / "in").mkdir()
    bound = args.criteria.latency_bound_ms
    log = Path(args.out) / "logs" / f"recovery-{system.name}"
    master = args.recovery_master if system.name == "dstream" else args.master

    def launch(
        part: str, extra: tuple[str, ...] = (), topics: tuple[str, str] | None = None
    ) -> Running:
        s = dataclasses.replace(system, extra=system.extra + extra)
        return Running(
            s,
            "total",
            work / "in",
            work,
            log.with_name(f"{log.name}-{part}"),
            args.interval_ms,
            args.parallelism,
            args.checkpoint_ms,
            master,
            topics,
        )

    runs = [launch("before")]
    data: list[bytes] = []
    per_file = args.recovery_rate * args.interval_ms // 1000
    step = args.interval_ms / 1000
    events: dict[str, Any] = {}
    try:
        runs[0].wait_started(args.start_timeout_s)
        feed = Input(work / "in", pool)
        first = feed.write(per_file, data)
        deadline = time.time() + args.start_timeout_s
        while not any(o.ts >= first for o in runs[0].snapshot()):
            if time.time() > deadline:
                raise RuntimeError(f"{system.name}: no first result; see {runs[0].err_path}")
            time.sleep(0.1)
        files = int(args.recovery_s / step)
        kill_at = int(args.kill_after_s / step)
        next_at = time.monotonic()
        for n in range(files):
            next_at += step
            time.sleep(max(0.0, next_at - time.monotonic()))
            feed.write(per_file, data)
            if n == kill_at:
                events["killed_ms"] = now_ms()
                if system.name == "dstream":
                    pids = executors(runs[0].proc.pid)
                    if not pids:
                        raise RuntimeError(
                            "no executor JVM found to kill; is the master local-cluster?"
                        )
                    os.kill(pids[0], signal.SIGKILL)
                    events["killed"] = f"executor JVM {pids[0]} of {len(pids)}"
                else:
                    runs[0].kill()
                    events["killed"] = "the program's process group"
                    extra: tuple[str, ...] = ()
                    if system.name.startswith("flink"):
                        chk = newest_checkpoint(work / "checkpoint")
                        events["restored_from"] = str(chk)
                        if chk is not None:
                            extra = ("--restore", str(chk))
                    runs.append(launch("after", extra, runs[0].topics))
                    events["restarted_ms"] = now_ms()
        events["input_stopped_ms"] = now_ms()
        want = oracle(data).total
        deadline = time.time() + args.drain_timeout_s
        while True:
            outs = [o for r in runs for o in r.snapshot() if o.kind == "t"]
            v = judge(fold(outs, upsert=True), want)
            if v.ok or time.time() > deadline:
                break
            time.sleep(1)
    finally:
        for r in runs:
            r.kill()
        shutil.rmtree(work, ignore_errors=True)
    outs = [o for r in runs for o in r.snapshot() if o.kind == "t"]
    back = back_on_schedule(outs, events["killed_ms"], bound)
    before = [o for o in outs if o.arrived < events["killed_ms"]]
    row = {
        "system": system.name,
        "keys": args.keys,
        "rate": args.recovery_rate,
        "checkpoint_ms": args.checkpoint_ms,
        **events,
        "back_on_schedule_ms": back,
        "recovery_s": None if back is None else (back - events["killed_ms"]) / 1000,
        "latency_before": latency_summary(before[len(before) // 2 :]),
        "latency_timeline": latency_timeline(outs, events["killed_ms"]),
        "verdict": v.to_json(),
    }
    print(
        f"recovery {system.name}: back on schedule after {row['recovery_s']} s, "
        f"outputs {v.to_json()}",
        flush=True,
    )
    return row


def recovery_figure(args: argparse.Namespace) -> int:
    path = Path(args.out) / "recovery.json"
    report: dict[str, Any] = {
        "command": shlex.join(["python", "-m", "bench.peers", *sys.argv[1:]]),
        "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "versions": versions(),
        "latency_bound_ms": args.criteria.latency_bound_ms,
        "rows": [],
    }
    code = 0
    for name in args.systems:
        system = SYSTEMS[name]
        why = system.missing()
        if why:
            print(f"recovery {name}: skipped, {why}", flush=True)
            continue
        try:
            row = recover_one(args, system)
        except RuntimeError as e:
            row = {"system": name, "error": str(e)}
            code = 1
        report["rows"].append(row)
        path.write_text(json.dumps(report, indent=2, default=str))
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(f"run it from the harness: {ROOT}/.venv/bin/python -m bench.peers --figures recovery")
