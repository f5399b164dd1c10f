"""kill -9 the executor holding one copy of a received block before the interval that reads
it runs (``python -m testbed.receiver_faults``), once for each of the block's two copies
(in ``make test`` one copy in each receiver placement, every copy in ``make test-full``):
the interval reads the copy left (the interval's RDD reads stored blocks only, it has no
lineage to recompute them from), and every record the client sent is in exactly one
interval's output, checked against the client's own log. A client with the wrong secret
connecting meanwhile is refused and none of its records is output (``run_faults``)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.cluster


def run_faults(options: str, records: int) -> list[dict[str, Any]]:
    """``python -m testbed.receiver_faults`` with ``options`` (split on spaces): one JSON
    record per kill, each checked for what every run must show — the client sent
    ``records`` records without an error, each is output exactly once, and the client with
    the wrong secret was refused and none of its records output."""
    args = [sys.executable, "-m", "testbed.receiver_faults", "--records", str(records)]
    args += options.split()
    proc = subprocess.run(args, check=False, capture_output=True, text=True, timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-5000:]
    runs = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    for run in runs:
        assert run["client_errors"] == []
        assert len(run["sent"]) == records
        received = Counter(v for values in run["values"].values() for v in values)
        assert received == Counter(run["sent"])  # none lost, none twice
        assert len(run["intruder"]) == 1 and run["intruder"][0].startswith("refused")
        assert len(run["refusals"]) == 1 and "wrong HMAC" in run["refusals"][0]
        assert "intruder" not in received
    return runs


# make test loses one copy of a block here (the second) and the other below (on the
# receiver's own executor); make test-full loses each copy in each placement.
@pytest.mark.parametrize(
    "kills", [["second"], pytest.param(["first", "second"], marks=pytest.mark.full)]
)
def test_losing_either_copy_of_a_block_loses_and_duplicates_nothing(kills: list[str]) -> None:
    options = " ".join(f"--kill {kill}" for kill in kills)
    runs = run_faults(f"--intervals 6 --at 3 {options}", records=400)
    assert [r["kill"] for r in runs] == kills
    for run in runs:
        victim = run["victim_block"]
        assert len(victim["executors"]) == 2  # stored on two executors before the ack
        assert run["killed"] == [victim["executors"][0 if run["kill"] == "first" else 1]]
        # The interval that read the block ran after its executor was killed.
        assert victim["seq"] in run["blocks"][str(run["victim_interval"])]
        assert not set(run["killed"]) & set(run["executors_after"])


@pytest.mark.parametrize(
    "kills", [["receiver"], pytest.param(["receiver", "replica"], marks=pytest.mark.full)]
)
def test_losing_the_receivers_executor_or_the_replicas_loses_and_duplicates_nothing(
    kills: list[str],
) -> None:
    """The receiver on an executor (placement="executors"): kill -9 the executor running it
    (which holds one copy of the blocks it stored) or the one holding a block's other copy
    (make test-full), while the client keeps sending. The receiver starts again on another
    executor, on the same port; the client sends what it kept there; every record is output
    exactly once."""
    options = "--placement executors --pace-ms 10 --intervals 8 --at 3"
    runs = run_faults(options + "".join(f" --kill {kill}" for kill in kills), records=600)
    assert [r["kill"] for r in runs] == kills
    for run in runs:
        victim = run["victim_block"]
        receiver = run["receivers_before"]["0"]
        # Stored on the receiver's executor and one other before the acknowledgement.
        assert len(victim["executors"]) == 2 and receiver in victim["executors"]
        other = next(e for e in victim["executors"] if e != receiver)
        assert run["killed"] == [receiver if run["kill"] == "receiver" else other]
        assert victim["seq"] in run["blocks"][str(run["victim_interval"])]
        if run["kill"] == "receiver":  # started again elsewhere
            assert run["receivers_after"]["0"] not in (receiver, None)
        else:
            assert run["receivers_after"]["0"] == receiver
        assert run["active_jobs_after_stop"] == []  # the receiver's task ended with the stream
