"""Window bookkeeping: which parent intervals a window covers, which enter and which leave.

Pure arithmetic on integer time, no Spark. A parent stream that slides every ``p`` has one
RDD per time ``u`` (``u - zero`` a multiple of ``p``), holding the records of ``[u - p, u)``.
A window of length ``w`` ending at ``t`` covers ``[t - w, t)``: the parent RDDs at

    t - w + p, t - w + 2p, ..., t

Example, p = 1 s, w = 3 s, slide s = 2 s, windows ending at t = 4 and t = 6::

    parent RDD times:   1    2    3    4    5    6
                       ┌────┬────┬────┬────┬────┬────┐
    window(4) = [1, 4)      │ 2  │ 3  │ 4  │              covers 2, 3, 4
    window(6) = [3, 6)                │ 4  │ 5  │ 6  │    covers 4, 5, 6
                            └──leave──┘    └─enter──┘
    leave at 6  = window(4) - window(6) = 2, 3     (times t - w - s + p ... t - w)
    entering(6) = window(6) - window(4) = 5, 6     (times t - s + p ... t)

With an inverse function the window's value is ``value(t - s) + entering - leaving``
(Figure 4b of the paper), so a long window costs what its slide costs, not what it spans.
When the window is no longer than the slide, consecutive windows share nothing: every
interval of the previous window leaves, every interval of the new one enters.

Times at or before the zero time (the stream's start) do not exist and are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from dstream.time import Duration, Time, to_duration

__all__ = [
    "WindowSpec",
    "entering",
    "window_spec",
    "window_times",
]


@dataclass(frozen=True)
class WindowSpec:
    window: Duration
    slide: Duration
    parent_slide: Duration


def window_spec(operator: str, window: object, slide: object, parent_slide: Duration) -> WindowSpec:
    """Parse and check a window: both lengths must be whole multiples of the parent's slide."""
    w = to_duration(window, f"{operator}() windowDuration")
    s = parent_slide if slide is None else to_duration(slide, f"{operator}() slideDuration")
    if not w.is_multiple_of(parent_slide):
        raise ValueError(
            f"{operator}() windowDuration {w} must be a multiple of the parent stream's slide "
            f"{parent_slide}; use e.g. {max(1, w.ms // parent_slide.ms) * parent_slide.ms} ms"
        )
    if not s.is_multiple_of(parent_slide):
        raise ValueError(
            f"{operator}() slideDuration {s} must be a multiple of the parent stream's slide "
            f"{parent_slide}; use e.g. {max(1, s.ms // parent_slide.ms) * parent_slide.ms} ms"
        )
    return WindowSpec(w, s, parent_slide)


def _times(first: Time, last: Time, step: Duration, zero: Time) -> list[Time]:
    start = max(first.ms, zero.ms + step.ms)
    # Only times on the parent's grid exist (zero + k * step).
    offset = (start - zero.ms) % step.ms
    if offset:
        start += step.ms - offset
    return [Time(ms) for ms in range(start, last.ms + 1, step.ms)]


def window_times(end: Time, spec: WindowSpec, zero: Time) -> list[Time]:
    """Parent times inside the window ending at ``end``: ``end - w + p`` .. ``end``."""
    return _times(end - spec.window + spec.parent_slide, end, spec.parent_slide, zero)


def entering(end: Time, spec: WindowSpec, zero: Time) -> list[Time]:
    """Parent times in window(end) but not in window(end - slide)."""
    span = min(spec.slide, spec.window)
    return _times(end - span + spec.parent_slide, end, spec.parent_slide, zero)
