"""The metric record of one group at one interval, from the sums the stream keeps.

Every interval the monitor emits, for each group (a dimension value, or ``all``) that has a
live session or had an active one within the window, one record with the metrics below. Each
definition is also the README's; "in the window" means in the intervals (t - window, t].
"""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

from . import hll
from .config import MonitorConfig
from .session import (
    I_BITRATE_PLAY,
    I_BUFFERING,
    I_DROPPED,
    I_EXITS,
    I_EXITS_BEFORE_START,
    I_EXITS_BUFFERING,
    I_JOIN_FAILURES,
    I_JOIN_TIME,
    I_JOINS,
    I_PLAY,
    I_PLAYBACK_FAILURES,
    I_PLAYS,
)

__all__ = ["METRICS", "alerting", "assemble", "to_line"]

METRICS: dict[str, str] = {
    "concurrent_sessions": "sessions joined and not yet exited, failed or closed by the timeout",
    "join_attempts": "join events (play attempts) in the window",
    "join_failures": "attempts in the window that ended with an error before playback started",
    "join_failure_rate": "join_failures / join_attempts",
    "plays": "sessions whose playback started (first heartbeat) in the window",
    "avg_join_time_ms": "mean startup time (the first heartbeat's buffering) of those plays",
    "viewing_minutes": "minutes played in the window, over all sessions",
    "buffering_ratio": "rebuffering time / (rebuffering + played time) in the window",
    "avg_bitrate_kbps": "bitrate of the heartbeats in the window, weighted by time played",
    "dropped_frames_per_minute": "frames dropped per minute played in the window",
    "exits": "exit events in the window",
    "exits_during_buffering": "exits in the window while the player was buffering",
    "exits_before_start": "exits in the window of sessions whose video never started",
    "playback_failures": "errors in the window after playback had started",
    "unique_viewers": "distinct viewer ids of the sessions with an event in the window (exact)",
    "unique_viewers_hll": "the same, estimated with HyperLogLog (mergeable, fixed size)",
    "sessions_over_buffering_threshold": (
        "live sessions whose rebuffering ratio since they started exceeds the threshold"
    ),
    "sessions_buffering_now": "live sessions whose last heartbeat was mostly buffering",
    "stalled_sessions": "live sessions with no event for the stall time (not yet timed out)",
    "baseline_buffering_ratio": (
        "buffering_ratio over the baseline: the baseline window before the last window"
    ),
    "alert": (
        "buffering_ratio >= the alert floor and >= factor x baseline_buffering_ratio, "
        "with enough viewing in both (for the alert dimensions)"
    ),
}


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def alerting(dim: str, short: tuple[int, int], long: tuple[int, int], cfg: MonitorConfig) -> bool:
    """The alert rule on (rebuffering ms, played ms) over the window (``short``) and over
    the baseline window (``long``, which contains the short one)."""
    if dim not in cfg.alert_dimensions:
        return False
    buf, play = short
    base_buf, base_play = long[0] - buf, long[1] - play
    view, base_view = buf + play, base_buf + base_play
    if view < cfg.alert_min_view_ms or base_view < cfg.alert_min_view_ms:
        return False
    ratio, baseline = Fraction(buf, view), Fraction(base_buf, base_view)
    return ratio >= cfg.alert_floor and ratio >= cfg.alert_factor * baseline


def assemble(
    group: tuple[str, str], parts: dict[str, Any], cfg: MonitorConfig
) -> dict[str, Any] | None:
    """The record of ``group`` from what the stream computed for it this interval:
    ``w`` the INCREMENTS summed over the window, ``b`` (rebuffering, played) ms over the
    baseline window, ``g`` the GAUGES, ``u`` the exact unique viewers, ``h`` the window's
    HyperLogLog sketch. None if the group has neither live sessions nor window activity."""
    if "w" not in parts and "g" not in parts:
        return None
    w = parts.get("w") or (0,) * 12
    g = parts.get("g") or (0, 0, 0, 0)
    long = parts.get("b") or (0, 0)
    sketch = parts.get("h")
    dim, value = group
    play, buf = w[I_PLAY], w[I_BUFFERING]
    base_buf, base_play = long[0] - buf, long[1] - play
    return {
        "dim": dim,
        "value": value,
        "concurrent_sessions": g[0],
        "join_attempts": w[I_JOINS],
        "join_failures": w[I_JOIN_FAILURES],
        "join_failure_rate": _ratio(w[I_JOIN_FAILURES], w[I_JOINS]),
        "plays": w[I_PLAYS],
        "avg_join_time_ms": _ratio(w[I_JOIN_TIME], w[I_PLAYS]),
        "viewing_minutes": play / 60000,
        "buffering_ratio": _ratio(buf, buf + play),
        "avg_bitrate_kbps": _ratio(w[I_BITRATE_PLAY], play),
        "dropped_frames_per_minute": _ratio(w[I_DROPPED] * 60000, play),
        "exits": w[I_EXITS],
        "exits_during_buffering": w[I_EXITS_BUFFERING],
        "exits_before_start": w[I_EXITS_BEFORE_START],
        "playback_failures": w[I_PLAYBACK_FAILURES],
        "unique_viewers": parts.get("u", 0) if cfg.exact_uniques else None,
        "unique_viewers_hll": hll.estimate(sketch) if sketch is not None else 0,
        "sessions_over_buffering_threshold": g[1],
        "sessions_buffering_now": g[2],
        "stalled_sessions": g[3],
        "baseline_buffering_ratio": _ratio(base_buf, base_buf + base_play),
        "alert": alerting(dim, (buf, play), long, cfg),
    }


def to_line(record: dict[str, Any]) -> str:
    """One output line: the record as JSON (floats round-trip exactly)."""
    return json.dumps(record, sort_keys=True)
