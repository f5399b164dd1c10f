"""One probe of the throughput benchmark: one system, one workload, one input rate, in a
process of its own (bench/paper/throughput.py starts it; a fresh SparkContext on a fresh watched
directory every time, so no JVM state carries over from one probe to the next).

Once the system has started (its first, empty, interval done; Structured Streaming: its
query waiting for data), so that start-up is not charged to the warm-up, the writer
(bench/paper/throughput_input.py) renames one file per interval into the directory at the middle
of the interval, through the warm-up (see :func:`warm_up`) and then ``sustain_s`` seconds;
the probe then waits until every file's interval produced its result, or until the latency
bound has passed since the last rename, stops the system and writes JSON:

- ``batches``: per interval, its processing time (the system's own: the StreamingListener's
  processing delay for the DStream engines, Structured Streaming's ``triggerExecution``
  duration, the computation for pyarrow), when its result was produced and which files it
  read;
- ``files``: per file, its end-to-end latency = (epoch ms when the output function of the
  interval that read the file returned) - (epoch ms just after the file's rename into the
  watched directory returned), both taken in this process; ``null`` if it got no result;
- ``summary``: bench/throughput_search.summarize over the intervals and files after the
  warm-up (files renamed during the warm-up and the intervals that read them are left out).

    .venv/bin/python -m bench.paper.throughput_probe '{"system": "dstream", ...}' OUT
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.paper import throughput_systems as systems
from bench.paper.throughput_input import RecordPool, Writer
from bench.paper.throughput_search import ProbeSummary, summarize

READY_TIMEOUT_S = 120


@dataclass(frozen=True)
class ProbeParams:
    system: str
    workload: str
    rate: int
    interval_ms: int
    warmup_s: float
    sustain_s: float
    latency_bound_ms: int
    master: str = "local[2]"
    pool_records: int = 500_000
    pool_cache: str = "/tmp/dstream-throughput-pool"
    max_warmup_s: float | None = None  # default: 2 * warmup_s + 10 (see warm_up)
    files: int | None = None  # exactly this many files, all measured (--check)
    keep_results: bool = False  # every interval's result in the JSON (for --check)
    work_root: str | None = None  # where the watched directory goes (default_work_root())
    retain_s: float | None = None  # files older than this are deleted (default: retention())


def default_work_root() -> str | None:
    """tmpfs (/dev/shm) when there is one: at the rates Grep reaches (300+ MB/s) a disk-backed
    directory throttles the writer (dirty-page writeback), its files land late and every
    system sees doubled intervals; in memory the writer keeps its schedule."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def retention(workload: str) -> float:
    """How long a file stays in the watched directory after its rename: long enough that
    every system has read it (a system 10 s behind has long failed the latency bound), and
    for the windowed workloads the window plus that margin (their intervals' shuffle output
    is kept for rebuilds, so input is only read again if that were lost). Deleting them keeps a
    probe's input in tmpfs bounded: 10 s at 8M records/s is 8 GB."""
    return 10.0 if workload == "grep" else systems.WINDOW_S + 10.0


def run_probe(p: ProbeParams) -> dict[str, Any]:
    root = p.work_root if p.work_root is not None else default_work_root()
    work = Path(tempfile.mkdtemp(prefix=f"dstream-throughput-{p.system}-", dir=root))
    directory = work / "in"
    directory.mkdir()
    pool = RecordPool(p.pool_records, p.pool_cache)
    retain_s = p.retain_s if p.retain_s is not None else retention(p.workload)
    if p.files is not None:  # --check: every file stays until the system has read it
        retain_s = math.inf
    writer = Writer(str(directory), pool, p.rate, p.interval_ms, p.files, retain_s)
    try:
        running = systems.start_system(
            p.system, p.workload, str(directory), work, p.interval_ms, p.master
        )
        try:
            wait_until(running.ready, READY_TIMEOUT_S, f"{p.system} to start")
            writer.start(lead_ms=2 * p.interval_ms)
            if p.files is None:
                measured_from = warm_up(p, writer)
                first = (measured_from - writer.first_boundary_ms) // p.interval_ms
                writer.finish_with(first + round(p.sustain_s * 1000 / p.interval_ms))
            else:
                measured_from = writer.first_boundary_ms
            writer.join()
            last = writer.written[-1].renamed_ms
            while now_ms() < last + p.latency_bound_ms + p.interval_ms:
                if not unanswered(writer, now_ms()):
                    break
                time.sleep(0.05)
        finally:
            writer.stop()
            running.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report(p, writer, measured_from)


def now_ms() -> int:
    return int(time.time() * 1000)


def unanswered(writer: Writer, renamed_before_ms: int) -> list[str]:
    """The files renamed in by the given time whose interval has no result yet."""
    done = {f for b in systems.RECORDER.snapshot().values() if b.result_ms for f in b.files}
    return [
        w.name for w in writer.written if w.renamed_ms <= renamed_before_ms and w.name not in done
    ]


def warm_up(p: ProbeParams, writer: Writer) -> int:
    """The interval boundary from which files are measured: at least ``warmup_s`` after the
    first file and, up to ``max_warmup_s``, not before the system has caught up, i.e. every
    file renamed more than two intervals ago has its result. A system's first intervals with
    data are slow (Python workers start, code is loaded and compiled); the backlog they leave
    must not be charged to the measured period, or a rate close to capacity fails only
    because it drains slowly."""
    start = writer.first_boundary_ms
    earliest = start + round(p.warmup_s * 1000)
    max_warmup_s = p.max_warmup_s if p.max_warmup_s is not None else 2 * p.warmup_s + 10
    latest = start + round(max_warmup_s * 1000)
    time.sleep(max(0.0, earliest / 1000 - time.time()))
    while now_ms() < latest and unanswered(writer, now_ms() - 2 * p.interval_ms):
        time.sleep(0.1)
    return writer.boundary_ms(-(-(now_ms() - start) // p.interval_ms))


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout_s:.0f} s for {what}; is the machine idle?")
        time.sleep(0.05)


def report(p: ProbeParams, writer: Writer, measured_from: int) -> dict[str, Any]:
    batches = systems.RECORDER.snapshot()
    batch_of = {name: key for key, b in batches.items() for name in b.files}
    files_out, latencies = [], []
    for w in writer.written:
        key = batch_of.get(w.name)
        result_ms = batches[key].result_ms if key is not None else None
        latency = None if result_ms is None else result_ms - w.renamed_ms
        files_out.append({**asdict(w), "batch": key, "latency_ms": latency})
        if w.renamed_ms >= measured_from:
            latencies.append(latency)
    # The intervals that end after the first measured file was renamed (half an interval
    # after measured_from) and no later than the one that reads the last file.
    end = writer.first_boundary_ms + len(writer.written) * p.interval_ms + p.interval_ms // 2
    measured_keys = {
        k
        for k, b in batches.items()
        if b.time_ms is not None and measured_from + p.interval_ms // 2 < b.time_ms <= end
    }
    processing = [
        b.processing_ms
        for k, b in sorted(batches.items())
        if k in measured_keys and b.processing_ms is not None
    ]
    out: dict[str, Any] = {
        "params": asdict(p),
        "first_boundary_ms": writer.first_boundary_ms,
        "measured_from_ms": measured_from,
        "warmup_used_s": (measured_from - writer.first_boundary_ms) / 1000,
        "files": files_out,
        "batches": [
            {
                "key": k,
                "time_ms": b.time_ms,
                "processing_ms": b.processing_ms,
                "result_ms": b.result_ms,
                "files": b.files,
                "measured": k in measured_keys,
            }
            for k, b in sorted(batches.items())
        ],
    }
    if processing and latencies:
        out["summary"] = summarize(p.rate, processing, latencies).to_json()
    else:  # nothing finished in the sustain period: the system fell hopelessly behind
        inf = math.inf
        n = len(files_out)
        out["summary"] = ProbeSummary(p.rate, 0, n, n, inf, inf, inf, inf, inf).to_json()
    if p.keep_results:
        out["results"] = {str(k): b.result for k, b in sorted(batches.items())}
    return out


def main() -> int:
    params = ProbeParams(**json.loads(sys.argv[1]))
    result = run_probe(params)
    Path(sys.argv[2]).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
