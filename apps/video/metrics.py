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

__all__ = ["ALERT_KINDS", "METRICS", "alert_kinds", "assemble", "ended_joins", "narrow", "to_line"]

# What an alert can be about: a group's rebuffering, or its join failures, jumping against
# the group's own baseline.
ALERT_KINDS = ("buffering", "join_failures")

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
    "failed_join_share": (
        "of the join attempts that ended in the window (failed, started playing, or exited "
        "before starting), the share that failed"
    ),
    "baseline_failed_join_share": "failed_join_share over the baseline",
    "excess_buffering_ms": (
        "rebuffering ms in the window beyond what the baseline's ratio predicts"
    ),
    "excess_join_failures": "join failures in the window beyond the baseline's share",
    "alert_kinds": (
        "what the group alerts on: buffering (buffering_ratio >= the alert floor and >= "
        "factor x baseline_buffering_ratio, enough viewing in both), join_failures "
        "(failed_join_share >= the join alert floor and >= factor x "
        "baseline_failed_join_share, enough ended attempts in both, and beyond chance); "
        "alert dimensions only"
    ),
    "alert": "alert_kinds is not empty",
}


def ended_joins(w: tuple[int, ...]) -> int:
    """Join attempts that ended in an interval (or window) of increments ``w``: failed,
    started playing, or exited before starting."""
    return w[I_JOIN_FAILURES] + w[I_PLAYS] + w[I_EXITS_BEFORE_START]


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _excess(num: int, den: int, base_num: int, base_den: int) -> float | None:
    """``num`` beyond what the baseline's rate predicts for ``den`` (exact, then a float)."""
    if not base_den:
        return None
    return float(num - Fraction(base_num, base_den) * den)


def alert_kinds(
    dim: str, window: tuple[int, ...], baseline: tuple[int, int, int, int], cfg: MonitorConfig
) -> list[str]:
    """The alert rules on the window's (rebuffering ms, played ms, join attempts that ended,
    of which failed) and the same sums over the baseline window (which contains the
    window). A join's outcome (failure, first heartbeat, exit before start) comes 0.3-4 s
    after it, so the share of ended attempts that failed is compared, not failures over the
    attempts that began in the window (a burst of joins would otherwise look like a drop)."""
    if dim not in cfg.alert_dimensions:
        return []
    buf, play, ended, failed = window
    base_buf, base_play = baseline[0] - buf, baseline[1] - play
    base_ended, base_failed = baseline[2] - ended, baseline[3] - failed
    kinds = []
    view, base_view = buf + play, base_buf + base_play
    if min(view, base_view) >= cfg.alert_min_view_ms:
        ratio = Fraction(buf, view)
        if ratio >= cfg.alert_floor and ratio >= cfg.alert_factor * Fraction(base_buf, base_view):
            kinds.append("buffering")
    if min(ended, base_ended) >= cfg.alert_min_joins:
        share = Fraction(failed, ended)
        if (
            share >= cfg.join_alert_floor
            and share >= cfg.alert_factor * Fraction(base_failed, base_ended)
            and beyond_chance(failed, ended, base_failed, base_ended)
        ):
            kinds.append("join_failures")
    return kinds


def beyond_chance(failed: int, ended: int, base_failed: int, base_ended: int) -> bool:
    """Whether ``failed`` of ``ended`` is at least 4 standard deviations above what the
    baseline's rate gives (a binomial at that rate, smoothed by one failure and one success
    so that a baseline without failures is not certainty): a few attempts in a small group
    fail together by chance more often than a rate threshold admits."""
    p = Fraction(base_failed + 1, base_ended + 2)
    expected = ended * p
    return failed > expected and (failed - expected) ** 2 >= 16 * expected * (1 - p)


def assemble(
    group: tuple[str, str], parts: dict[str, Any], cfg: MonitorConfig
) -> dict[str, Any] | None:
    """The record of ``group`` from what the stream computed for it this interval:
    ``w`` the INCREMENTS summed over the window, ``b`` (rebuffering ms, played ms, ended
    join attempts, failed ones) over the baseline window, ``g`` the GAUGES, ``u`` the exact
    unique viewers, ``h`` the window's HyperLogLog sketch. None if the group has neither
    live sessions nor window activity."""
    if "w" not in parts and "g" not in parts:
        return None
    w = parts.get("w") or (0,) * 12
    g = parts.get("g") or (0, 0, 0, 0)
    long = parts.get("b") or (0, 0, 0, 0)
    sketch = parts.get("h")
    dim, value = group
    play, buf = w[I_PLAY], w[I_BUFFERING]
    failed = w[I_JOIN_FAILURES]
    ended = ended_joins(w)
    base_buf, base_play = long[0] - buf, long[1] - play
    base_ended, base_failed = long[2] - ended, long[3] - failed
    kinds = alert_kinds(dim, (buf, play, ended, failed), long, cfg)
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
        "failed_join_share": _ratio(failed, ended),
        "baseline_failed_join_share": _ratio(base_failed, base_ended),
        "excess_buffering_ms": _excess(buf, buf + play, base_buf, base_buf + base_play),
        "excess_join_failures": _excess(failed, ended, base_failed, base_ended),
        "alert_kinds": kinds,
        "alert": bool(kinds),
    }


_EXCESS = {"buffering": "excess_buffering_ms", "join_failures": "excess_join_failures"}
_INSIDE = {"cdn": 0, "region": 1}  # a cdn_region value is "<cdn>/<region>"


def _explains(specific: dict[str, Any], broad: dict[str, Any], kind: str) -> bool:
    """Whether an alert on a CDN-in-region group accounts for one on a broader group: a CDN
    or a region group when it contains it (its CDN, its region); an ISP or a device group
    when it holds at least half of that group's excess (the sums per group cannot say how
    many of the group's sessions are on that CDN in that region: a heuristic)."""
    part = _INSIDE.get(broad["dim"])
    if part is not None:
        return bool(specific["value"].split("/")[part] == broad["value"])
    mine, theirs = specific[_EXCESS[kind]], broad[_EXCESS[kind]]
    return mine is not None and theirs is not None and 2 * mine >= theirs


def narrow(alerting: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One interval's alerts, narrowed: for each kind, an alerting CDN-in-region group
    names the broader alerting groups it accounts for (``explains``) and they are not
    reported on their own; every other alerting group is. One record per reported (group,
    kind): the group's record with ``kind`` and ``explains`` ("dim=value", sorted), in
    (kind, dim, value) order. Deterministic: the same records give the same alerts."""
    out = []
    for kind in ALERT_KINDS:
        groups = sorted(
            (r for r in alerting if kind in r["alert_kinds"]), key=lambda r: (r["dim"], r["value"])
        )
        specific = [r for r in groups if r["dim"] == "cdn_region"]
        # The largest excess first: a broader group is credited to the one that explains most.
        specific.sort(key=lambda r: (-(r[_EXCESS[kind]] or 0.0), r["value"]))
        explains: dict[str, list[str]] = {r["value"]: [] for r in specific}
        for broad in groups:
            if broad["dim"] == "cdn_region":
                continue
            by = next((s for s in specific if _explains(s, broad, kind)), None)
            if by is None:
                out.append({**broad, "kind": kind, "explains": []})
            else:
                explains[by["value"]].append(f"{broad['dim']}={broad['value']}")
        out.extend({**s, "kind": kind, "explains": sorted(explains[s["value"]])} for s in specific)
    return sorted(out, key=lambda r: (r["kind"], r["dim"], r["value"]))


def to_line(record: dict[str, Any]) -> str:
    """One output line: the record as JSON (floats round-trip exactly)."""
    return json.dumps(record, sort_keys=True)
