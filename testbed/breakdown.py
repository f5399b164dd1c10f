"""Where each interval of a ``testbed.faults`` run goes, stage by stage (issue 61 item 1): the
Spark jobs of the interval (its job group, or any other job submitted while it ran: a
checkpoint landing in it), and for each stage its tasks' count, their summed executor run,
deserialization, GC and scheduler delay, shuffle read and write, where the tasks ran
(locality), and the stage's wall time; what is left of the interval is the driver's time
outside the stages (building the interval's RDDs, submitting and completing its jobs).

Task metrics come from Spark's REST API (the run's SparkContext needs ``spark.ui.enabled``),
read at the end of each run, before the next run's stages push them out of the UI's store.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

# Summed over a stage's successful tasks (Spark's task metrics, ms).
TASK_MS = (
    "executorRunTime",
    "executorDeserializeTime",
    "jvmGcTime",
    "resultSerializationTime",
)


def _get(ui: str, app: str, path: str) -> Any:
    with urllib.request.urlopen(f"{ui}/api/v1/applications/{app}/{path}", timeout=60) as r:
        return json.load(r)


def _union_ms(spans: list[tuple[int, int]]) -> int:
    """The length of the union of ``[begin, end)`` spans (ms)."""
    total, end = 0, None
    for b, e in sorted(spans):
        if end is None or b > end:
            total += e - b
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


def _epoch_ms(text: str | None) -> int | None:
    """Spark's REST time ("2026-12-07T05:26:01.123GMT") as epoch ms."""
    if not text:
        return None
    from datetime import UTC, datetime

    parsed = datetime.strptime(text.replace("GMT", ""), "%Y-%m-%dT%H:%M:%S.%f")
    return int(parsed.replace(tzinfo=UTC).timestamp() * 1000)


def stage_row(ui: str, app: str, stage: dict[str, Any]) -> dict[str, Any]:
    """One stage attempt: its tasks' sums and the stage's wall time."""
    sid, attempt = stage["stageId"], stage["attemptId"]
    tasks = _get(ui, app, f"stages/{sid}/{attempt}/taskList?length=10000")
    ok = [t for t in tasks if t.get("status") == "SUCCESS"]
    row: dict[str, Any] = {
        "stage": sid,
        "attempt": attempt,
        "name": stage["name"].split(" at ")[0],
        "tasks": len(ok),
        "failed_tasks": len(tasks) - len(ok),
    }
    for m in TASK_MS:
        row[m] = sum(int(t.get("taskMetrics", {}).get(m, 0)) for t in ok)
    row["schedulerDelay"] = sum(int(t.get("schedulerDelay", 0)) for t in ok)
    row["max_task_ms"] = max((int(t.get("duration", 0)) for t in ok), default=0)
    row["shuffle_read_bytes"] = int(stage.get("shuffleReadBytes", 0))
    row["shuffle_remote_read_bytes"] = int(stage.get("shuffleRemoteBytesRead", 0))
    row["shuffle_write_bytes"] = int(stage.get("shuffleWriteBytes", 0))
    row["input_bytes"] = int(stage.get("inputBytes", 0))
    locality: dict[str, int] = {}
    for t in ok:
        kind = str(t.get("taskLocality", "?"))
        locality[kind] = locality.get(kind, 0) + 1
    row["locality"] = dict(sorted(locality.items()))
    row["executors"] = sorted({str(t.get("executorId")) for t in ok})
    # Each task: [partition, executor, ms from the stage's first launch to its own, its
    # duration, its run time] (who waited and who was slow).
    first = min((_epoch_ms(t.get("launchTime")) or 0 for t in ok), default=0)
    row["each_task"] = sorted(
        [
            int(t.get("partitionId", t.get("index", -1))),
            str(t.get("executorId")),
            (_epoch_ms(t.get("launchTime")) or 0) - first,
            int(t.get("duration", 0)),
            int(t.get("taskMetrics", {}).get("executorRunTime", 0)),
        ]
        for t in ok
    )
    begin, end = _epoch_ms(stage.get("submissionTime")), _epoch_ms(stage.get("completionTime"))
    row["wall_ms"] = end - begin if begin is not None and end is not None else None
    row["span"] = [begin, end]
    return row


def job_ids(ui: str, app: str) -> list[int]:
    return [int(j["jobId"]) for j in _get(ui, app, "jobs")]


def collect(
    ui: str, app: str, windows: dict[int, tuple[int, int]], first_job: int
) -> dict[str, dict[str, Any]]:
    """Interval ms -> its breakdown, for the intervals whose wall-clock ``windows`` (epoch ms
    from the clock's advance to the interval's completion) are given; only jobs from
    ``first_job`` on (this run's)."""
    jobs = [j for j in _get(ui, app, "jobs") if j["jobId"] >= first_job]
    stages = {(s["stageId"], s["attemptId"]): s for s in _get(ui, app, "stages")}
    by_interval: dict[int, list[dict[str, Any]]] = {}
    for job in jobs:
        group = job.get("jobGroup") or ""
        tail = group.rsplit("-", 1)[-1]
        kind = (
            "checkpoint" if "-checkpoint-" in group else "interval" if tail.isdigit() else "other"
        )
        submitted = _epoch_ms(job.get("submissionTime")) or 0
        owner = int(tail) if kind == "interval" and int(tail) in windows else None
        if owner is None:  # a job of no interval (a checkpoint) that ran inside one
            owner = next((ms for ms, (b, e) in windows.items() if b <= submitted <= e), None)
        if owner is None:
            continue
        by_interval.setdefault(owner, []).append(
            {
                "job": job["jobId"],
                "group": group,
                "kind": kind,
                "stage_ids": sorted(job.get("stageIds", [])),
            }
        )
    out: dict[str, dict[str, Any]] = {}
    for ms, its_jobs in sorted(by_interval.items()):
        begin, end = windows[ms]
        rows = []
        for job in sorted(its_jobs, key=lambda j: j["job"]):
            for sid in job["stage_ids"]:
                for (s, _attempt), stage in sorted(stages.items()):
                    # A skipped stage (its shuffle output already there) has no tasks.
                    if s == sid and stage.get("status") != "SKIPPED":
                        rows.append(
                            {"job": job["job"], "kind": job["kind"]} | stage_row(ui, app, stage)
                        )
        spans = [
            (max(r["span"][0], begin), min(r["span"][1], end))
            for r in rows
            if r["span"][0] is not None and r["span"][1] is not None
        ]
        in_stages = _union_ms([s for s in spans if s[1] > s[0]])
        out[str(ms)] = {
            "wall_ms": end - begin,
            "stages_ms": in_stages,
            "outside_stages_ms": end - begin - in_stages,
            "jobs": len(its_jobs),
            "stages": rows,
        }
    return out
