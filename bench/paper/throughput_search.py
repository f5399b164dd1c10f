"""The pure logic of the throughput benchmark (bench/paper/throughput.py): summarising one probe,
judging it against the criteria, and searching for the highest sustained rate. No Spark here,
so tests/unit/test_throughput_search.py runs it with a fake probe in milliseconds.

A probe runs one system on one workload at one input rate (records/s) and reports, for the
intervals after its warm-up, each interval's processing time and each input file's
end-to-end latency: from the moment the file was renamed into the watched directory to the
moment the result of the interval that read it was produced (the output function returned).
A file that never got a result counts as an infinite latency.

It passes when both hold (issue 7):

    mean processing time  <  interval
    p95 end-to-end latency <  latency bound   (2 s with 1 s intervals, 1 s with 0.5 s)

The search ramps the rate up by doubling from ``start_rate`` until a probe fails (or down by
halving while the start fails), then bisects between the last pass and the first fail until
they are within ``tolerance`` of each other, then repeats the best passing rate: if a repeat
fails, that rate is treated as failing and the bisection goes on below it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "Criteria",
    "ProbeSummary",
    "SearchResult",
    "percentile",
    "search",
    "summarize",
    "verdict",
]


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of ``values``; ``inf`` counts as a value."""
    if not values:
        raise ValueError("percentile of no values; a probe must measure at least one interval")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q {q} must be within 0..100")
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass(frozen=True)
class Criteria:
    """What a probe must achieve to count as sustained."""

    interval_ms: int
    latency_bound_ms: int

    @classmethod
    def for_interval(cls, interval_ms: int, latency_bound_ms: int | None = None) -> Criteria:
        """Issue 7's bounds: p95 latency under 2 s with 1 s intervals and under 1 s with 0.5 s
        intervals, i.e. twice the interval unless given."""
        if interval_ms <= 0:
            raise ValueError(f"interval {interval_ms} ms must be positive, e.g. 1000 or 500")
        bound = 2 * interval_ms if latency_bound_ms is None else latency_bound_ms
        if bound <= 0:
            raise ValueError(f"latency bound {bound} ms must be positive, e.g. 2000")
        return cls(interval_ms, bound)


@dataclass(frozen=True)
class ProbeSummary:
    """One probe reduced to the numbers the criteria and the report need (milliseconds)."""

    rate: int
    intervals: int
    files: int
    files_without_result: int
    mean_processing_ms: float
    p50_processing_ms: float
    p95_processing_ms: float
    p50_latency_ms: float
    p95_latency_ms: float

    def to_json(self) -> dict[str, Any]:
        # JSON has no infinity: a latency that never ended is written as null.
        return {k: (None if v == math.inf else v) for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProbeSummary:
        values: dict[str, Any] = {k: (math.inf if v is None else v) for k, v in data.items()}
        return cls(**values)


def summarize(
    rate: int, processing_ms: Sequence[float], latency_ms: Sequence[float | None]
) -> ProbeSummary:
    """Summarise the measured intervals' processing times and the measured files' latencies
    (``None``: the file's interval never produced a result)."""
    if not processing_ms or not latency_ms:
        raise ValueError(
            f"a probe at {rate} records/s measured {len(processing_ms)} intervals and "
            f"{len(latency_ms)} files; both must be non-empty: make --sustain-s longer"
        )
    latencies = [math.inf if v is None else float(v) for v in latency_ms]
    return ProbeSummary(
        rate=rate,
        intervals=len(processing_ms),
        files=len(latencies),
        files_without_result=sum(1 for v in latency_ms if v is None),
        mean_processing_ms=statistics.fmean(processing_ms),
        p50_processing_ms=percentile(processing_ms, 50),
        p95_processing_ms=percentile(processing_ms, 95),
        p50_latency_ms=percentile(latencies, 50),
        p95_latency_ms=percentile(latencies, 95),
    )


def verdict(summary: ProbeSummary, criteria: Criteria) -> tuple[bool, str]:
    """Whether ``summary`` meets ``criteria``, and why not."""
    reasons = []
    if not summary.mean_processing_ms < criteria.interval_ms:
        reasons.append(
            f"mean processing {summary.mean_processing_ms:.0f} ms >= interval "
            f"{criteria.interval_ms} ms"
        )
    if not summary.p95_latency_ms < criteria.latency_bound_ms:
        reasons.append(
            f"p95 latency {summary.p95_latency_ms:.0f} ms >= bound {criteria.latency_bound_ms} ms"
        )
    return (not reasons, "; ".join(reasons) or "ok")


@dataclass
class SearchResult:
    """The highest rate that passed (and was confirmed by its repeats), every probe in the
    order it ran, and whether the search stopped at ``max_rate`` still passing."""

    sustained_rate: int | None
    capped: bool
    probes: list[tuple[ProbeSummary, bool, str]] = field(default_factory=list)


def search(
    probe: Callable[[int], ProbeSummary],
    criteria: Criteria,
    *,
    start_rate: int,
    max_rate: int,
    min_rate: int = 100,
    tolerance: float = 0.1,
    repeats: int = 1,
    max_probes: int = 30,
) -> SearchResult:
    """Ramp, bisect, repeat (see the module docstring); ``probe(rate)`` runs one probe."""
    if not 0 < min_rate <= start_rate <= max_rate:
        raise ValueError(
            f"rates must satisfy 0 < min_rate {min_rate} <= start_rate {start_rate} <= "
            f"max_rate {max_rate}; e.g. --start-rate 5000 --max-rate 1000000"
        )
    if not 0 < tolerance < 1:
        raise ValueError(f"tolerance {tolerance} must be within (0, 1), e.g. 0.1 for 10 %")
    result = SearchResult(sustained_rate=None, capped=False)
    passed: dict[int, bool] = {}

    def run(rate: int) -> bool:
        if len(result.probes) >= max_probes:
            raise RuntimeError(
                f"the search ran {max_probes} probes without converging; raise max_probes "
                "or the tolerance"
            )
        summary = probe(rate)
        ok, why = verdict(summary, criteria)
        result.probes.append((summary, ok, why))
        passed[rate] = passed.get(rate, True) and ok
        return ok

    # Ramp: up by doubling while passing, down by halving while failing.
    lo: int | None = None  # highest rate known to pass
    hi: int | None = None  # lowest rate known to fail
    rate = start_rate
    if run(rate):
        lo = rate
        while lo < max_rate:
            rate = min(2 * lo, max_rate)
            if run(rate):
                lo = rate
            else:
                hi = rate
                break
        else:
            result.capped = True
    else:
        hi = rate
        while lo is None and rate // 2 >= min_rate:
            rate //= 2
            if run(rate):
                lo = rate
            else:
                hi = rate
    if lo is None:
        return result

    while True:
        # Bisect until the bracket is within tolerance of the passing end.
        while hi is not None and hi - lo > tolerance * lo:
            mid = (lo + hi) // 2
            if run(mid):
                lo = mid
            else:
                hi = mid
        # Confirm the final point; a failed repeat demotes it.
        if all(run(lo) for _ in range(repeats)):
            result.sustained_rate = lo
            return result
        result.capped = False
        hi = lo
        lower = [r for r, ok in passed.items() if ok and r < lo]
        if lower:
            lo = max(lower)
            continue
        rate = lo
        found = False
        while rate // 2 >= min_rate:
            rate //= 2
            if run(rate):
                lo, found = rate, True
                break
            hi = rate
        if not found:
            return result
