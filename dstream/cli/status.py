"""``dstream status CHECKPOINT_DIR [--json]``: what a checkpoint directory holds, read without
starting Spark: the program (its streams and the state each keeps), the last completed
interval, pending and failed intervals, the state checkpoints and their ages, and the driver
that owns the directory (its lease). Local paths and ``file:`` URIs."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from dstream.storage.filesystem import LocalFileSystem
from dstream.storage.journal import CheckpointDirectoryError, MetadataJournal
from dstream.time import human_time

__all__ = ["directory_status", "run_status"]


class StatusError(Exception):
    """A path that is not a readable dstream checkpoint directory."""


def directory_status(path: str) -> dict[str, Any]:
    """What ``path`` holds, as a JSON-serialisable dict."""
    if "://" in path and not path.startswith("file:"):
        raise StatusError(
            f"{path}: dstream status reads local checkpoint directories; for HDFS, copy its "
            "metadata/ and owners/ directories locally (hdfs dfs -get) and point status there"
        )
    local = Path(path.removeprefix("file://").removeprefix("file:"))
    if not local.is_dir():
        raise StatusError(
            f"{path} is not a directory; give the directory passed to ssc.checkpoint()"
        )
    journal = MetadataJournal(LocalFileSystem(), str(local))
    try:
        journal.check_directory(create=False)
        latest = journal.read_latest()
    except CheckpointDirectoryError as exc:
        raise StatusError(str(exc)) from None
    if not (local / "DSTREAM").exists():
        raise StatusError(
            f"{path} is not a dstream checkpoint directory (no DSTREAM marker); give the "
            "directory passed to ssc.checkpoint()"
        )
    now = time.time()
    status: dict[str, Any] = {"directory": str(local), "program": None}
    if latest is not None:
        r = latest.record
        status["program"] = {
            "batchInterval": f"{r.batch_ms} ms",
            "streams": sorted(r.names.values()),
            "lastGenerated": human_time(r.generated_ms),
            "lastCompleted": human_time(r.completed_ms),
            "pending": [human_time(ms) for ms in r.pending_ms],
            "failed": [human_time(ms) for ms in r.failed_ms],
            "spark": {"master": r.spark_master, "app": r.spark_app},
            "recordWritten": human_time(
                int((local / "metadata" / f"record-{latest.seq:012d}").stat().st_mtime * 1000)
            ),
        }
        states = []
        for sid, state in sorted(r.streams.items()):
            if "checkpoint_ms" in state:
                states.append(
                    {
                        "stream": r.names.get(sid, str(sid)),
                        "lastCheckpoint": human_time(state["checkpoint_ms"]),
                        "checkpoints": _checkpoints(local / f"state-{state.get('key')}", now),
                    }
                )
        status["states"] = states
    status["owner"] = _owner(local / "owners")
    return status


def _checkpoints(directory: Path, now: float) -> list[dict[str, Any]]:
    found = []
    for entry in sorted(directory.iterdir()) if directory.is_dir() else []:
        if entry.name.isdigit():
            complete = (entry / "_COMPLETE").exists()
            age = now - entry.stat().st_mtime
            interval = human_time(int(entry.name))
            found.append({"interval": interval, "complete": complete, "ageSeconds": round(age, 1)})
    return found


def _owner(owners: Path) -> dict[str, Any] | None:
    found = owners.glob("epoch-*") if owners.is_dir() else []
    epochs = sorted(p for p in found if p.name[6:].isdigit())
    if not epochs:
        return None
    newest = epochs[-1]
    try:
        info = json.loads(newest.read_text())
    except (OSError, ValueError):
        info = {}
    started = info.get("started_ms")
    return {
        "epoch": int(newest.name[6:]),
        "pid": info.get("pid"),
        "host": info.get("host"),
        "started": human_time(started) if isinstance(started, int) else None,
    }


def _text(status: dict[str, Any]) -> str:
    lines = [f"checkpoint directory {status['directory']}"]
    program = status["program"]
    if program is None:
        lines.append("  no metadata record yet: the program never completed an interval here")
    else:
        lines += [
            f"  program       {program['spark']['app']} on {program['spark']['master']}, "
            f"{program['batchInterval']} intervals",
            f"  streams       {', '.join(program['streams'])}",
            f"  completed     up to {program['lastCompleted']} "
            f"(record written {program['recordWritten']})",
            f"  pending       {', '.join(program['pending']) or 'none'}",
            f"  failed        {', '.join(program['failed']) or 'none'}",
        ]
        for state in status.get("states", []):
            kept = ", ".join(
                f"{c['interval']} ({c['ageSeconds']:.0f} s old"
                + ("" if c["complete"] else ", incomplete")
                + ")"
                for c in state["checkpoints"]
            )
            lines.append(
                f"  state         {state['stream']}: last checkpoint {state['lastCheckpoint']}; "
                f"on disk: {kept or 'none'}"
            )
    owner = status["owner"]
    if owner is None:
        lines.append("  owner         none recorded")
    else:
        lines.append(
            f"  owner         epoch {owner['epoch']}: pid {owner['pid']} on {owner['host']}, "
            f"started {owner['started']}"
        )
    return "\n".join(lines)


def run_status(path: str, as_json: bool) -> int:
    try:
        status = directory_status(path)
    except StatusError as exc:
        print(f"dstream status: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(status, indent=2) if as_json else _text(status))
    return 0
