"""The headline speed claim states the latency bound the throughput results were measured
under (bench/results/throughput/1000ms-*.json, BENCHMARKS.md), not another one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "bench" / "results" / "throughput"
CLAIMS = ("README.md", "docs/index.md", "docs/benchmarks.md")


def measured_bound() -> str:
    """The criterion every 1 s-interval result of the README's table was searched under, in
    the words the claims use."""
    criteria = {
        (r["interval_ms"], r["latency_bound_ms"])
        for r in (json.loads(p.read_text()) for p in sorted(RESULTS.glob("1000ms-*.json")))
    }
    assert len(criteria) == 1, f"the 1 s results were measured under several bounds: {criteria}"
    ((interval_ms, bound_ms),) = criteria
    return (
        f"p95 end-to-end latency under {bound_ms / 1000:g} s at {interval_ms / 1000:g} s intervals"
    )


@pytest.mark.parametrize("page", CLAIMS)
def test_the_speed_claim_names_the_measured_bound(page: str) -> None:
    text = " ".join((REPO / page).read_text().split())  # line breaks as spaces
    bound = measured_bound()
    assert bound == "p95 end-to-end latency under 2 s at 1 s intervals"
    assert "1 s latency bound" not in text, f"{page} claims a bound that was not measured"
    assert bound in text, f"{page} does not state the bound measured: {bound!r}"
    assert "p95 end-to-end latency below the bound (2 s with 1 s intervals" in " ".join(
        (REPO / "BENCHMARKS.md").read_text().split()
    )
