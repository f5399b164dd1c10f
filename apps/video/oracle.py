"""What the monitor must output, computed in plain Python, interval by interval.

Written apart from the streaming program on purpose: one mutable object per session, a
dict of sessions, each window summed again from the intervals it covers (no incremental
add/subtract), unique viewers as sets. It follows the rules the program promises:

* interval i reads the events it is given, in order; a session starts with its join (any
  other event of an unknown session is ignored); after an exit or an error a session is
  ended and ignores what follows, but every event still counts as its latest activity;
* after the interval's events, a session whose latest event came in an interval at or
  before ``t - timeout`` is closed (removed);
* a session's contribution to an interval (joins, plays, played ms...) goes to all its
  groups; a window covers the intervals (t - window, t].

Feed it the same batches as the stream (one list of events per interval) and compare.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from . import hll
from .config import MonitorConfig, groups_of
from .events import ERROR, EXIT, HEARTBEAT, JOIN, Event
from .metrics import narrow

__all__ = ["Oracle", "OracleSession"]


def _significant(failed: int, joins: int, base_failed: int, base_joins: int) -> bool:
    # At least 4 binomial standard deviations above the baseline's (smoothed) rate.
    rate = Fraction(base_failed + 1, base_joins + 2)
    mean = rate * joins
    sd2 = mean * (1 - rate)
    return failed > mean and (failed - mean) * (failed - mean) >= 16 * sd2


Group = tuple[str, str]


@dataclass
class OracleSession:
    dims: tuple[str, ...]
    viewer: int
    status: str = "joining"  # joining, playing, exited, failed
    error: str = ""
    join_time_ms: int = 0
    play_ms: int = 0
    buffering_ms: int = 0
    bitrate_play: int = 0
    dropped: int = 0
    buffering_now: bool = False
    last_batch_ms: int = 0

    @property
    def ended(self) -> bool:
        return self.status in ("exited", "failed")


@dataclass
class _Interval:
    """What one interval contributed: per group, the summed counters, and the viewers."""

    sums: dict[Group, dict[str, int]] = field(default_factory=dict)
    viewers: dict[Group, set[int]] = field(default_factory=dict)


COUNTERS = (
    "joins",
    "join_failures",
    "plays",
    "join_time_ms",
    "play_ms",
    "buffering_ms",
    "bitrate_play",
    "dropped_frames",
    "exits",
    "exits_buffering",
    "exits_before_start",
    "playback_failures",
)


class Oracle:
    def __init__(self, cfg: MonitorConfig) -> None:
        self.cfg = cfg
        self.sessions: dict[int, OracleSession] = {}
        self.history: deque[_Interval] = deque(maxlen=cfg.baseline_ms // cfg.batch_ms)
        self.timed_out: list[int] = []  # per interval: live sessions closed by the timeout

    def _apply(self, s: OracleSession, event: Event, c: dict[str, int]) -> None:
        kind = event[0]
        if s.ended or kind == JOIN:
            return
        if kind == HEARTBEAT:
            bitrate, buffering, played, dropped = event[3:7]
            if s.status == "joining":
                s.status = "playing"
                s.join_time_ms += buffering
                c["plays"] += 1
                c["join_time_ms"] += buffering
            else:
                s.buffering_ms += buffering
                c["buffering_ms"] += buffering
            s.play_ms += played
            s.bitrate_play += bitrate * played
            s.dropped += dropped
            s.buffering_now = buffering > played
            c["play_ms"] += played
            c["bitrate_play"] += bitrate * played
            c["dropped_frames"] += dropped
        elif kind == EXIT:
            c["exits"] += 1
            c["exits_buffering"] += event[3]
            if s.status == "joining":
                c["exits_before_start"] += 1
            s.status, s.buffering_now = "exited", bool(event[3])
        elif kind == ERROR:
            c["join_failures" if s.status == "joining" else "playback_failures"] += 1
            s.status, s.error = "failed", event[3]

    def step(self, batch_ms: int, events: list[Event]) -> dict[Group, dict[str, Any]]:
        """Apply one interval's events; returns its records, by group."""
        contributions: dict[int, dict[str, int]] = {}
        for event in events:
            sid = event[2]
            s = self.sessions.get(sid)
            if s is None:
                if event[0] != JOIN:
                    continue
                s = OracleSession(tuple(event[4:10]), event[3])
                self.sessions[sid] = s
                contributions[sid] = dict.fromkeys(COUNTERS, 0)
                contributions[sid]["joins"] = 1
            c = contributions.setdefault(sid, dict.fromkeys(COUNTERS, 0))
            self._apply(s, event, c)
            s.last_batch_ms = batch_ms
        interval = _Interval()
        for sid, c in contributions.items():
            s = self.sessions[sid]
            for g in groups_of(s.dims):
                sums = interval.sums.setdefault(g, dict.fromkeys(COUNTERS, 0))
                for name, value in c.items():
                    sums[name] += value
                interval.viewers.setdefault(g, set()).add(s.viewer)
        self.history.append(interval)
        expired = [
            sid
            for sid, s in self.sessions.items()
            if s.last_batch_ms <= batch_ms - self.cfg.timeout_ms
        ]
        # Sessions that went silent while live (not those that had ended and waited).
        self.timed_out.append(sum(not self.sessions[sid].ended for sid in expired))
        for sid in expired:
            del self.sessions[sid]
        return self._records(batch_ms)

    def _window(self, intervals: int) -> tuple[dict[Group, dict[str, int]], dict[Group, set[int]]]:
        sums: dict[Group, dict[str, int]] = {}
        viewers: dict[Group, set[int]] = {}
        for interval in list(self.history)[-intervals:]:
            for g, s in interval.sums.items():
                total = sums.setdefault(g, dict.fromkeys(COUNTERS, 0))
                for name, value in s.items():
                    total[name] += value
            for g, v in interval.viewers.items():
                viewers.setdefault(g, set()).update(v)
        return sums, viewers

    def _gauges(self, batch_ms: int) -> dict[Group, list[int]]:
        gauges: dict[Group, list[int]] = {}
        for s in self.sessions.values():
            if s.ended:
                continue
            viewed = s.buffering_ms + s.play_ms
            over = viewed > 0 and Fraction(s.buffering_ms, viewed) > self.cfg.buffering_threshold
            stalled = batch_ms - s.last_batch_ms >= self.cfg.stall_ms
            for g in groups_of(s.dims):
                v = gauges.setdefault(g, [0, 0, 0, 0])
                v[0] += 1
                v[1] += over
                v[2] += s.buffering_now
                v[3] += stalled
        return gauges

    def _records(self, batch_ms: int) -> dict[Group, dict[str, Any]]:
        cfg = self.cfg
        window, viewers = self._window(cfg.window_ms // cfg.batch_ms)
        baseline, _ = self._window(cfg.baseline_ms // cfg.batch_ms)
        gauges = self._gauges(batch_ms)
        records = {}
        for g in set(window) | set(gauges):
            w = window.get(g, dict.fromkeys(COUNTERS, 0))
            b = baseline.get(g, dict.fromkeys(COUNTERS, 0))
            live = gauges.get(g, [0, 0, 0, 0])
            seen = viewers.get(g, set())
            buf, play = w["buffering_ms"], w["play_ms"]
            base_buf, base_play = b["buffering_ms"] - buf, b["play_ms"] - play

            def ratio(num: int, den: int) -> float | None:
                return None if den == 0 else num / den

            joins, failed = w["joins"], w["join_failures"]
            ended = failed + w["plays"] + w["exits_before_start"]
            base_failed = b["join_failures"] - failed
            base_ended = b["join_failures"] + b["plays"] + b["exits_before_start"] - ended

            def beyond(num: int, den: int, base_num: int, base_den: int) -> float | None:
                return None if base_den == 0 else float(num - Fraction(base_num, base_den) * den)

            view, base_view = buf + play, base_buf + base_play
            kinds = []
            if (
                g[0] in cfg.alert_dimensions
                and min(view, base_view) >= cfg.alert_min_view_ms
                and Fraction(buf, view) >= cfg.alert_floor
                and Fraction(buf, view) >= cfg.alert_factor * Fraction(base_buf, base_view)
            ):
                kinds.append("buffering")
            if (
                g[0] in cfg.alert_dimensions
                and min(ended, base_ended) >= cfg.alert_min_joins
                and Fraction(failed, ended) >= cfg.join_alert_floor
                and Fraction(failed, ended) >= cfg.alert_factor * Fraction(base_failed, base_ended)
                and _significant(failed, ended, base_failed, base_ended)
            ):
                kinds.append("join_failures")
            records[g] = {
                "dim": g[0],
                "value": g[1],
                "concurrent_sessions": live[0],
                "join_attempts": joins,
                "join_failures": failed,
                "join_failure_rate": ratio(failed, joins),
                "plays": w["plays"],
                "avg_join_time_ms": ratio(w["join_time_ms"], w["plays"]),
                "viewing_minutes": play / 60000,
                "buffering_ratio": ratio(buf, view),
                "avg_bitrate_kbps": ratio(w["bitrate_play"], play),
                "dropped_frames_per_minute": ratio(w["dropped_frames"] * 60000, play),
                "exits": w["exits"],
                "exits_during_buffering": w["exits_buffering"],
                "exits_before_start": w["exits_before_start"],
                "playback_failures": w["playback_failures"],
                "unique_viewers": len(seen) if cfg.exact_uniques else None,
                "unique_viewers_hll": hll.estimate(hll.sketch_of(seen, cfg.hll_precision))
                if seen
                else 0,
                "sessions_over_buffering_threshold": live[1],
                "sessions_buffering_now": live[2],
                "stalled_sessions": live[3],
                "baseline_buffering_ratio": ratio(base_buf, base_view),
                "failed_join_share": ratio(failed, ended),
                "baseline_failed_join_share": ratio(base_failed, base_ended),
                "excess_buffering_ms": beyond(buf, view, base_buf, base_view),
                "excess_join_failures": beyond(failed, ended, base_failed, base_ended),
                "alert_kinds": kinds,
                "alert": bool(kinds),
            }
        return records

    @staticmethod
    def alerts(records: dict[Group, dict[str, Any]]) -> list[dict[str, Any]]:
        """The alerts the monitor reports for an interval's records: the alerting groups,
        narrowed by :func:`video.metrics.narrow` (a pure function of them, tested on its
        own in tests/unit/test_video_oracle.py)."""
        return narrow([r for r in records.values() if r["alert"]])

    def answers(self, customer: str, n: int = 5, kbps: float = 3000.0) -> dict[str, Any]:
        """The ad-hoc queries of :mod:`video.queries` on the sessions held now."""
        live = [s for s in self.sessions.values() if not s.ended]
        per_cdn: dict[str, list[int]] = {}
        for s in live:
            if s.status == "playing":
                v = per_cdn.setdefault(s.dims[2], [0, 0, 0])
                v[0] += s.buffering_ms
                v[1] += s.buffering_ms + s.play_ms
                v[2] += 1
        ranked = sorted(
            ((cdn, buf / view, count) for cdn, (buf, view, count) in per_cdn.items() if view),
            key=lambda r: (-r[1], r[0]),
        )
        return {
            "active_sessions": len(live),
            "customer_sessions": sum(s.dims[0] == customer for s in live),
            "failed_sessions": sum(s.status == "failed" for s in self.sessions.values()),
            "top_cdns_by_buffering": ranked[:n],
            "sessions_above_bitrate": sum(
                s.play_ms > 0 and s.bitrate_play > kbps * s.play_ms for s in live
            ),
        }

    def run(
        self, batches: list[list[Event]], first_batch_ms: int
    ) -> list[dict[Group, dict[str, Any]]]:
        """Records of every interval; batch i (from 0) is the interval ending at
        ``first_batch_ms + i * batch_ms``."""
        return [
            self.step(first_batch_ms + i * self.cfg.batch_ms, events)
            for i, events in enumerate(batches)
        ]
