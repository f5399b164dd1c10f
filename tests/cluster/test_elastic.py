"""The elastic policy on real executors (``python -m testbed.elastic``): a keyed running
total whose load goes light, heavy, light on local-cluster[3,1,640], under
``ElasticPolicy(min_executors=1, max_executors=3)``. The executors follow the load (down
while light, up while heavy, down again), each keyed state's partitions follow the
executors, and every interval's totals equal the oracle. Removal by decommissioning (the
recommended conf, dstream.sparkconf.DECOMMISSION: the removed executors hand their blocks
over) runs in CI; removal by kill (the states checkpointed first, what the removed
executors held rebuilt from that checkpoint: the machinery of every executor-loss test)
in ``make test-full``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.cluster


def run_elastic(*options: str) -> dict[str, Any]:
    args = [sys.executable, "-m", "testbed.elastic", *options]
    proc = subprocess.run(args, check=False, capture_output=True, text=True, timeout=900, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-5000:]
    (line,) = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    result: dict[str, Any] = json.loads(line)
    result["log"] = proc.stderr  # the per-interval lines, and Spark's errors (executors lost)
    return result


def check_explained(run: dict[str, Any]) -> None:
    """check_followed_the_load, failing with what the run did and printed: a failure is a
    finding, and the run's log is what explains it."""
    try:
        check_followed_the_load(run)
    except AssertionError as exc:
        facts = {k: run[k] for k in ("actions", "live", "jvms", "schedule", "seconds")}
        raise AssertionError(f"{exc}\n{json.dumps(facts)}\n{run['log'][-8000:]}") from exc


def check_followed_the_load(run: dict[str, Any]) -> None:
    assert run["wrong"] == []  # every interval's totals equal the oracle
    light, heavy = run["phases"]["light"], run["phases"]["heavy"]
    kinds = [a["kind"] for a in run["actions"]]
    # Down while light, up while heavy (to the maximum), down again once light.
    assert kinds[0] == "scale down" and run["actions"][0]["target"] == 1
    ups = [a for a in run["actions"] if a["kind"] == "scale up"]
    assert ups and max(a["target"] for a in ups) == 3
    assert kinds[-1] == "scale down"
    live = {int(i): n for i, n in run["live"].items()}
    first_heavy = range(light + 1, light + 3)
    assert min(live[i] for i in first_heavy) == 1  # one executor working as the load rises
    assert max(live[i] for i in range(light + 1, light + heavy + 1)) == 3  # heavy: three
    assert live[run["intervals"]] < 3  # light again: fewer
    # Each keyed state's partitions followed the executors, step by step.
    counts = [n for _, n in run["schedule"]]
    assert counts[0] == 4 and 1 in counts and 3 in counts and len(counts) >= 4
    # The executors the first scale-down named are gone (their JVMs exited), and the
    # receiver-free choice took the newest: executor 0 (the oldest) works throughout.
    first_removed = {e.strip() for e in run["actions"][0]["executor"].split(",")}
    last = str(run["intervals"])
    assert first_removed and not first_removed & set(run["jvms"][last])
    assert all("0" in jvms for jvms in run["jvms"].values())


def test_executors_follow_the_load_and_every_total_is_exact_when_removal_decommissions() -> None:
    check_explained(run_elastic("--decommission"))


@pytest.mark.full
def test_executors_follow_the_load_and_every_total_is_exact_when_removal_kills() -> None:
    # A killing scale-down waits for the states' checkpoint: more light intervals after.
    check_explained(run_elastic("--light-after", "6"))
