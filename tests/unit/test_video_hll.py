"""The video monitor's HyperLogLog: merging is the union, and the estimate's error is the
documented 1.04 / sqrt(m), checked over many independent sets."""

from __future__ import annotations

import statistics

import pytest
from video import hll


def test_merging_sketches_gives_the_sketch_of_the_union() -> None:
    a = hll.sketch_of(range(0, 3000), 10)
    b = hll.sketch_of(range(2000, 7000), 10)
    union = hll.sketch_of(range(7000), 10)
    assert hll.merge(a, b) == union == hll.merge(b, a)
    assert hll.merge(a, a) == a
    assert hll.merge(a, bytes(len(a))) == a  # the empty sketch is neutral
    assert hll.merge(a, b) == bytes(max(x, y) for x, y in zip(a, b, strict=True))


def test_sketches_do_not_depend_on_order_or_repetition() -> None:
    values = [f"viewer-{i}" for i in range(500)]
    assert hll.sketch_of(values, 8) == hll.sketch_of(reversed(values * 3), 8)


@pytest.mark.parametrize("n", [2000, 10000])
def test_the_relative_error_matches_its_documented_standard_error(n: int) -> None:
    p = 10
    sigma = hll.relative_error(p)
    assert sigma == pytest.approx(1.04 / 32)
    errors = [
        hll.estimate(hll.sketch_of((f"{trial}:{i}" for i in range(n)), p)) / n - 1
        for trial in range(60)
    ]
    rms = statistics.fmean(e * e for e in errors) ** 0.5
    # 60 sets: the observed RMS error is within ~20 % of sigma with high probability, the
    # bias is small, and about 95 % of estimates fall within 2 sigma.
    assert 0.6 * sigma < rms < 1.3 * sigma
    assert abs(statistics.fmean(errors)) < sigma / 2
    assert sum(abs(e) <= 2 * sigma for e in errors) >= 0.85 * len(errors)


def test_small_counts_are_nearly_exact() -> None:
    for n in (0, 1, 10, 100):
        assert abs(hll.estimate(hll.sketch_of(range(n), 12)) - n) <= max(1, n // 50)


def test_bad_sketches_are_refused_with_the_fix() -> None:
    with pytest.raises(ValueError, match="precision 3 must be an integer from 4 to 16"):
        hll.new(3)
    with pytest.raises(ValueError, match="same precision"):
        hll.merge(bytes(16), bytes(32))
    with pytest.raises(ValueError, match="2\\*\\*p registers, got 100 bytes"):
        hll.estimate(bytes(100))
