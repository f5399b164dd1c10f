"""One probe of the throughput benchmark: one system, one workload, one input rate, in a
process of its own (bench/throughput.py starts it; a fresh SparkContext on a fresh watched
directory every time, so no JVM state carries over from one probe to the next).

Once the system has started (its first, empty, interval done; Structured Streaming: its
query waiting for data), so that start-up is not charged to the warm-up, the writer
(bench/throughput_input.py) renames one file per interval into the directory at the middle
of the interval, for ``warmup_s + sustain_s`` seconds; the probe then waits until every
file's interval produced its result, or until the latency bound has passed since the last
rename, stops the system and writes JSON:

- ``batches``: per interval, its processing time (the system's own: the StreamingListener's
  processing delay for the DStream engines, Structured Streaming's ``triggerExecution``
  duration, the computation for pyarrow), when its result was produced and which files it
  read;
- ``files``: per file, its end-to-end latency = (epoch ms when the output function of the
  interval that read the file returned) - (epoch ms just after the file's rename into the
  watched directory returned), both taken in this process; ``null`` if it got no result;
- ``summary``: bench/throughput_search.summarize over the intervals and files after the
  warm-up (files renamed in the first ``warmup_s`` and the intervals that read them are left
  out).

    PYTHONPATH=. .venv/bin/python bench/throughput_probe.py '{"system": "dstream", ...}' OUT
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import throughput_systems as systems
from throughput_input import RecordPool, Writer
from throughput_search import summarize

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
    files: int | None = None  # default: (warmup_s + sustain_s) / interval
    keep_results: bool = False  # every interval's result in the JSON (for --check)


def run_probe(p: ProbeParams) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix=f"dstream-throughput-{p.system}-"))
    directory = work / "in"
    directory.mkdir()
    files = p.files or round((p.warmup_s + p.sustain_s) * 1000 / p.interval_ms)
    pool = RecordPool(p.pool_records, p.pool_cache)
    writer = Writer(str(directory), pool, p.rate, p.interval_ms, files)
    try:
        running = systems.start_system(
            p.system, p.workload, str(directory), work, p.interval_ms, p.master
        )
        try:
            wait_until(running.ready, READY_TIMEOUT_S, f"{p.system} to start")
            writer.start(lead_ms=2 * p.interval_ms)
            writer.join()
            last = writer.written[-1].renamed_ms
            while time.time() * 1000 < last + p.latency_bound_ms + p.interval_ms:
                batches = systems.RECORDER.snapshot().values()
                done = {f for b in batches if b.result_ms for f in b.files}
                if all(w.name in done for w in writer.written):
                    break
                time.sleep(0.05)
        finally:
            writer.stop()
            running.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report(p, writer)


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"waited {timeout_s:.0f} s for {what}; is the machine idle?")
        time.sleep(0.05)


def report(p: ProbeParams, writer: Writer) -> dict[str, Any]:
    batches = systems.RECORDER.snapshot()
    batch_of = {name: key for key, b in batches.items() for name in b.files}
    measured_from = writer.first_boundary_ms + round(p.warmup_s * 1000)
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
    out["summary"] = (
        summarize(p.rate, processing, latencies).to_json() if processing and latencies else None
    )
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
