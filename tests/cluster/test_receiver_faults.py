"""kill -9 the executor holding one copy of a received block before the interval that reads
it runs (``python -m testbed.receiver_faults``), once for each of the block's two copies:
the interval reads the copy left (the interval's RDD reads stored blocks only, it has no
lineage to recompute them from), and every record the client sent is in exactly one
interval's output, checked against the client's own log. A client with the wrong secret
connecting meanwhile is refused and none of its records is output."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.cluster


def test_losing_either_copy_of_a_block_loses_and_duplicates_nothing() -> None:
    args = [sys.executable, "-m", "testbed.receiver_faults", "--records", "400"]
    args += ["--intervals", "6", "--at", "3", "--kill", "first", "--kill", "second"]
    proc = subprocess.run(args, check=False, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-5000:]
    runs = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert [r["kill"] for r in runs] == ["first", "second"]
    for run in runs:
        victim = run["victim_block"]
        assert len(victim["executors"]) == 2  # stored on two executors before the ack
        assert run["killed"] == [victim["executors"][0 if run["kill"] == "first" else 1]]
        # The interval that read the block ran after its executor was killed.
        assert victim["seq"] in run["blocks"][str(run["victim_interval"])]
        assert run["client_errors"] == []
        assert len(run["sent"]) == 400
        received = Counter(v for values in run["values"].values() for v in values)
        assert received == Counter(run["sent"])  # none lost, none twice
        assert not set(run["killed"]) & set(run["executors_after"])
        # A client with the wrong secret, mid-run: refused, told so, and none of its records.
        assert len(run["intruder"]) == 1 and run["intruder"][0].startswith("refused")
        assert len(run["refusals"]) == 1 and "wrong HMAC" in run["refusals"][0]
        assert "intruder" not in received
