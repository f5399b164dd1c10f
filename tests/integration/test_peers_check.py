"""bench/peers's check mode (#62) in `make test-full`: every system that is installed
(dstream always; PyFlink's DataStream and SQL programs and Bytewax once `make peers` has built
build/peers-venv) runs Grep, the keyed running total, WordCount and TopK over a 30 s window
over the same tiny input, and Grep again through Kafka (in and out: figure 2's path), and each
one's results equal the oracle, key by key (none lost, none doubled); a workload a system
does not support is skipped by name (System.unsupported)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.peers.harness import DEFAULT_SYSTEMS, ROOT, SYSTEMS
from bench.peers.records import WORKLOADS


@pytest.mark.full
def test_every_installed_system_computes_the_oracle(tmp_path: Path) -> None:
    installed = [s for s in DEFAULT_SYSTEMS if SYSTEMS[s].missing() is None]
    runs = [(w, "files") for w in WORKLOADS] + [("grep", "kafka")]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.peers",
            "--check",
            "--systems",
            *installed,
            "--out",
            str(tmp_path),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    report = json.loads((tmp_path / "check.json").read_text())
    for system in installed:
        for workload, via in runs:
            if SYSTEMS[system].cannot(workload, via) or SYSTEMS[system].missing(via):
                continue
            row = report[f"{workload}{'-kafka' if via == 'kafka' else ''}/{system}"]
            assert "verdict" in row, (row, done.stdout[-3000:])
            assert row["verdict"]["ok"], (row, done.stdout[-3000:])
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
