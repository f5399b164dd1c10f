"""Window bookkeeping: which parent intervals a window covers, enters and leaves."""

from __future__ import annotations

import itertools

import pytest

from dstream.streams.window_spec import WindowSpec, entering, window_spec, window_times
from dstream.time import Duration, Time

ZERO = Time(0)


def spec(w: int, s: int, p: int = 1000) -> WindowSpec:
    return WindowSpec(Duration(w), Duration(s), Duration(p))


def ms(times: list[Time]) -> list[int]:
    return [t.ms for t in times]


@pytest.mark.parametrize(
    ("w", "s", "end", "covered", "enter", "leave"),
    [
        #   p = 1 s, window 3 s, slide 1 s, ending at 5:
        #     1  2  3  4  5
        #          [3  4  5]      window(5)
        #       [2  3  4]         window(4): 2 leaves, 5 enters
        (3000, 1000, 5000, [3000, 4000, 5000], [5000], [2000]),
        #   window 3 s, slide 2 s, ending at 6 (the module docstring's picture)
        (3000, 2000, 6000, [4000, 5000, 6000], [5000, 6000], [2000, 3000]),
        #   window 2 s, slide 2 s (tumbling): nothing is shared
        (2000, 2000, 6000, [5000, 6000], [5000, 6000], [3000, 4000]),
        #   window 1 s, slide 3 s (gaps between windows): the old window leaves whole
        (1000, 3000, 6000, [6000], [6000], [3000]),
        #   early windows are clipped at the zero time
        (3000, 1000, 2000, [1000, 2000], [2000], []),
        (3000, 1000, 1000, [1000], [1000], []),
    ],
)
def test_table(
    w: int, s: int, end: int, covered: list[int], enter: list[int], leave: list[int]
) -> None:
    sp = spec(w, s)
    assert ms(window_times(Time(end), sp, ZERO)) == covered
    assert ms(entering(Time(end), sp, ZERO)) == enter
    left = set(window_times(Time(end) - sp.slide, sp, ZERO)) - set(
        window_times(Time(end), sp, ZERO)
    )
    assert sorted(t.ms for t in left) == leave  # what a window state evicts


def test_incremental_window_equals_set_difference_for_every_shape() -> None:
    """window(t) = window(t - s) + entering(t) - what left, for many shapes and zero times."""
    for p, wk, sk, zero_ms in itertools.product([500, 1000], range(1, 7), range(1, 5), [0, 700]):
        sp = spec(wk * p, sk * p, p)
        zero = Time(zero_ms)
        for k in range(1, 15):
            end = Time(zero_ms + k * sk * p)
            now = set(window_times(end, sp, zero))
            before = set(window_times(end - sp.slide, sp, zero))
            assert set(entering(end, sp, zero)) == now - before, (p, wk, sk, end)
            assert all((t.ms - zero_ms) % p == 0 and t > zero for t in now)
            assert len(now) == min(wk, (end.ms - zero_ms) // p)


def test_window_spec_checks_multiples_and_names_both_values() -> None:
    with pytest.raises(
        ValueError,
        match=r"window\(\) windowDuration 2500 ms must be a multiple of the parent stream's slide 1000 ms",
    ):
        window_spec("window", 2.5, None, Duration(1000))
    with pytest.raises(
        ValueError,
        match=r"reduceByWindow\(\) slideDuration 1500 ms must be a multiple of the parent stream's slide 1000 ms",
    ):
        window_spec("reduceByWindow", 3, "1500ms", Duration(1000))
    with pytest.raises(ValueError, match="negative"):
        window_spec("window", -3, None, Duration(1000))
    assert window_spec("window", "30s", 2, Duration(1000)) == spec(30_000, 2000)
    assert window_spec("window", 4, None, Duration(2000)).slide == Duration(2000)
