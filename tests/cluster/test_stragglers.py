"""A real straggler on a standalone cluster whose workers are distinct hosts: executor 0's
JVM and Python workers are stopped with SIGSTOP most of the time. With the engine's
speculation settings Spark launches copies of its slow tasks on the other hosts, and the
output equals that of a run without a straggler."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from testbed.faults import grep_oracle
from testbed.processes import process_tree
from testbed.standalone import StandaloneCluster

REPO = Path(__file__).resolve().parents[2]  # `python -m testbed.faults` runs from there

pytestmark = pytest.mark.cluster


def faults(cluster: StandaloneCluster, *extra: str) -> dict[str, Any]:
    args = [sys.executable, "-m", "testbed.faults", "grep", "--master"]
    args += [cluster.master_url, "--intervals", "8", "--kill", "0", *extra]
    proc = subprocess.run(args, check=False, capture_output=True, text=True, timeout=900, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-5000:]
    (run,) = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return dict(run)


def test_workers_are_distinct_hosts(cluster: StandaloneCluster) -> None:
    assert cluster.alive_workers() == ["127.0.0.2", "127.0.0.3", "127.0.0.4"]


def test_speculation_copies_a_stopped_executors_tasks(cluster: StandaloneCluster) -> None:
    reference = grep_oracle(8)  # what the run computes without failures
    slowed = faults(cluster, "--slow", "0.9", "--speculation", "--save")
    assert slowed["hosts"] == ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
    assert slowed["slowed"] is not None
    assert slowed["speculative_tasks"] > 0, slowed
    assert slowed["speculative_won"] > 0, slowed
    assert slowed["outputs"] == reference["outputs"]
    # Exactly-once files although two attempts of some tasks ran: one file set per interval.
    assert len(reference["saved"]) == 8
    assert slowed["saved"] == reference["saved"]


# make test-full: 24 intervals of 400 ms tasks and a cooldown, ~45 s; the speculation test
# above keeps a real straggler (and its exactly-once output) in make test.
@pytest.mark.full
def test_an_executor_that_keeps_straggling_is_avoided_then_brought_back(
    cluster: StandaloneCluster,
) -> None:
    # Tasks of 400 ms of their own (a slow store's reads): with Python workers reused, a
    # rate partition is ~20 ms of work, and a judgement of 20 ms tasks is one of scheduling
    # noise; and a newcomer's cold first tasks should not look like a straggler's.
    reference = grep_oracle(24)
    run = faults(
        cluster,
        *("--intervals", "24", "--task-ms", "400", "--slow", "0.9", "--speculation", "--avoid"),
        *("--avoid-window", "3", "--avoid-strikes", "2", "--avoid-cooldown", "6"),
    )
    slowed = run["slowed"]
    actions = [(a["kind"], a["executor"], a["target"]) for a in run["executor_actions"]]
    # Removed after its second slow interval, run on two, asked back after the cooldown.
    assert actions == [("avoid", slowed, 2), ("restore", slowed, 3)], run["executor_actions"]
    # The replacement joined and got work.
    newcomers = set(run["succeeded_by_executor"]) - {"0", "1", "2"}
    assert newcomers, run["succeeded_by_executor"]
    assert run["outputs"] == reference["outputs"]


def test_process_tree_includes_children() -> None:
    # A child that lives until its stdin closes.
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        tree = process_tree(os.getpid())
        assert tree[0] == os.getpid()
        assert child.pid in tree
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(30)
