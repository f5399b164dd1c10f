"""The throughput benchmark's criterion and rate search (bench/paper/throughput_search.py), driven
by a fake probe: no Spark, no files."""

from __future__ import annotations

import math

import pytest

# Last on the path: bench/ script names (traffic.py...) must not hide the apps packages.
from bench.paper.throughput_search import (
    Criteria,
    ProbeSummary,
    percentile,
    search,
    summarize,
    verdict,
)

ONE_S = Criteria.for_interval(1000)


def summary(rate: int, mean_ms: float, p95_latency_ms: float) -> ProbeSummary:
    return ProbeSummary(
        rate=rate,
        intervals=60,
        files=60,
        files_without_result=0,
        mean_processing_ms=mean_ms,
        p50_processing_ms=mean_ms,
        p95_processing_ms=mean_ms,
        p50_latency_ms=p95_latency_ms,
        p95_latency_ms=p95_latency_ms,
    )


def capacity_probe(capacity: int, flaky: set[int] | None = None):
    """A system that keeps up with rates up to ``capacity``; rates in ``flaky`` fail on
    their second and later runs."""
    runs: list[int] = []

    def probe(rate: int) -> ProbeSummary:
        runs.append(rate)
        bad = rate > capacity or (flaky is not None and rate in flaky and runs.count(rate) > 1)
        return summary(rate, 1500.0 if bad else 400.0, 5000.0 if bad else 900.0)

    return probe, runs


def test_bounds_follow_the_interval():
    assert Criteria.for_interval(1000).latency_bound_ms == 2000
    assert Criteria.for_interval(500).latency_bound_ms == 1000
    assert Criteria.for_interval(500, 1500).latency_bound_ms == 1500
    with pytest.raises(ValueError, match="interval 0 ms must be positive"):
        Criteria.for_interval(0)


@pytest.mark.parametrize(
    ("mean_ms", "p95_ms", "ok", "why"),
    [
        (400, 1500, True, "ok"),
        (999.9, 1999.9, True, "ok"),
        (1000, 1500, False, "mean processing 1000 ms >= interval 1000 ms"),
        (400, 2000, False, "p95 latency 2000 ms >= bound 2000 ms"),
        (1200, math.inf, False, "mean processing 1200 ms >= interval 1000 ms; p95 latency inf"),
    ],
)
def test_criterion_needs_both_mean_processing_and_p95_latency(mean_ms, p95_ms, ok, why):
    passed, reason = verdict(summary(1000, mean_ms, p95_ms), ONE_S)
    assert passed is ok
    assert reason.startswith(why)


def test_summary_counts_a_missing_result_as_infinite_latency():
    latencies: list[float | None] = [100.0] * 19 + [None]
    s = summarize(1000, [300.0, 500.0], latencies)
    assert s.mean_processing_ms == 400.0
    assert s.files_without_result == 1
    assert s.p95_latency_ms == 100.0  # 1 of 20 is exactly the 5 % the p95 ignores
    s = summarize(1000, [300.0], [*latencies, None])
    assert s.p95_latency_ms == math.inf
    assert ProbeSummary.from_json(s.to_json()) == s
    with pytest.raises(ValueError, match="make --sustain-s longer"):
        summarize(1000, [], [1.0])


def test_percentile_is_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 95) == 95.0
    assert percentile(values, 50) == 50.0
    assert percentile([7.0], 95) == 7.0


def test_ramp_doubles_then_bisects_then_repeats_the_final_point():
    probe, runs = capacity_probe(13_000)
    result = search(probe, ONE_S, start_rate=1000, max_rate=1_000_000, tolerance=0.1)
    assert runs[:5] == [1000, 2000, 4000, 8000, 16000]
    # Bisection stops once 13000 passes and 14000 fails (within 10 %); then the repeat.
    assert runs[5:] == [12000, 14000, 13000, 13000]
    assert result.sustained_rate == 13000
    assert not result.capped
    assert [ok for _, ok, _ in result.probes] == [r <= 13_000 for r in runs]


def test_start_rate_failing_ramps_down_by_halving():
    probe, runs = capacity_probe(700)
    result = search(probe, ONE_S, start_rate=4000, max_rate=100_000, tolerance=0.1)
    assert runs[:4] == [4000, 2000, 1000, 500]
    assert result.sustained_rate is not None
    assert 0.9 * 700 <= result.sustained_rate <= 700


def test_nothing_passes():
    probe, runs = capacity_probe(50)
    result = search(probe, ONE_S, start_rate=400, max_rate=1000, min_rate=100)
    assert runs == [400, 200, 100]
    assert result.sustained_rate is None


def test_capped_at_max_rate():
    probe, runs = capacity_probe(10**9)
    result = search(probe, ONE_S, start_rate=1000, max_rate=5000)
    assert runs == [1000, 2000, 4000, 5000, 5000]
    assert result.sustained_rate == 5000
    assert result.capped


def test_a_failed_repeat_demotes_the_final_point():
    probe, runs = capacity_probe(13_000, flaky={13_000})
    result = search(probe, ONE_S, start_rate=1000, max_rate=100_000, tolerance=0.1)
    # 13000 fails its repeat; 12000, the best pass below it, is within 10 % and confirmed.
    assert runs[-3:] == [13000, 13000, 12000]
    assert result.sustained_rate == 12000


def test_rejects_inconsistent_bounds():
    probe, _ = capacity_probe(1000)
    with pytest.raises(ValueError, match="start_rate 5000 <= max_rate 1000"):
        search(probe, ONE_S, start_rate=5000, max_rate=1000)
    with pytest.raises(ValueError, match=r"tolerance 1\.5"):
        search(probe, ONE_S, start_rate=100, max_rate=1000, tolerance=1.5)
