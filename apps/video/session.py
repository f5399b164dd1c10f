"""One session's state, kept by ``track``, and what it contributes to the metrics.

The state is a plain tuple (it pickles small and without any class of ours), read through
the field positions below. ``track`` calls :func:`initialize` with a session's first event
and :func:`update` with each later one; every event arrives tagged with the batch time of the
interval that read it, ``(batch_ms, event)``, so that a state knows what happened to it in
the latest interval (:data:`INC`, the session's increments for that interval).

A session that exits or fails is not dropped at once: it stays in the state, marked ended,
until the timeout closes it (it receives no more events), so that its final increments
reach the metrics in the interval it ended; ended sessions count in no gauge. A session
that goes silent stays live until the timeout closes it.
"""

from __future__ import annotations

from typing import Any

from .config import MonitorConfig, groups_of
from .events import ERROR, EXIT, HEARTBEAT, JOIN, Event

__all__ = [
    "GAUGES",
    "INCREMENTS",
    "gauge_items",
    "increment_items",
    "initialize",
    "update",
    "viewer_items",
]

State = tuple[Any, ...]

# Status of a session.
JOINING, PLAYING, EXITED, FAILED = 0, 1, 2, 3
STATUS_NAMES = ("joining", "playing", "exited", "failed")

# Positions in the state tuple.
DIMS = 0  # (customer, content, cdn, isp, device, region)
VIEWER = 1
JOINED_MS = 2  # event time of the join
STATUS = 3
ERROR_CODE = 4  # "" or the error's code
JOIN_TIME_MS = 5  # startup buffering (the first heartbeat's)
PLAY_MS = 6
BUFFERING_MS = 7  # rebuffering, startup excluded
BITRATE_PLAY = 8  # sum of bitrate (kbps) x played ms
DROPPED = 9
BUFFERING_NOW = 10  # the last heartbeat was mostly buffering (or the exit said so)
LAST_SEEN_MS = 11  # event time of the last event
BATCH_MS = 12  # batch time of the last event
INC = 13  # the increments of interval BATCH_MS (INCREMENTS order)

# The per-interval increments a session contributes (summed over a sliding window).
INCREMENTS = (
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
(
    I_JOINS,
    I_JOIN_FAILURES,
    I_PLAYS,
    I_JOIN_TIME,
    I_PLAY,
    I_BUFFERING,
    I_BITRATE_PLAY,
    I_DROPPED,
    I_EXITS,
    I_EXITS_BUFFERING,
    I_EXITS_BEFORE_START,
    I_PLAYBACK_FAILURES,
) = range(len(INCREMENTS))
ZERO = (0,) * len(INCREMENTS)

# The per-interval gauges over the sessions in the state.
GAUGES = ("concurrent_sessions", "sessions_over_threshold", "sessions_buffering_now", "stalled")


def initialize(_sid: int, tagged: tuple[int, Event]) -> State | None:
    """A session's state from its first event: a join starts it; any other first event
    (the session's join was never seen, or it was closed already) is ignored."""
    batch_ms, event = tagged
    if event[0] != JOIN:
        return None
    _, t, _, viewer, *dims, _bitrate = event
    inc = list(ZERO)
    inc[I_JOINS] = 1
    return (tuple(dims), viewer, t, JOINING, "", 0, 0, 0, 0, 0, False, t, batch_ms, tuple(inc))


def update(_sid: int, state: State, tagged: tuple[int, Event]) -> State:
    """The state after one more event. Never None: ended sessions wait for the timeout."""
    batch_ms, event = tagged
    s = list(state)
    inc = list(state[INC]) if state[BATCH_MS] == batch_ms else list(ZERO)
    s[BATCH_MS], s[LAST_SEEN_MS] = batch_ms, event[1]
    kind, status = event[0], state[STATUS]
    if status in (EXITED, FAILED) or kind == JOIN:
        pass  # nothing follows an end; a repeated join changes nothing
    elif kind == HEARTBEAT:
        _, _, _, bitrate, buffering, played, dropped = event
        if status == JOINING:
            s[STATUS] = PLAYING
            s[JOIN_TIME_MS] += buffering
            inc[I_PLAYS] += 1
            inc[I_JOIN_TIME] += buffering
        else:
            s[BUFFERING_MS] += buffering
            inc[I_BUFFERING] += buffering
        s[PLAY_MS] += played
        s[BITRATE_PLAY] += bitrate * played
        s[DROPPED] += dropped
        s[BUFFERING_NOW] = buffering > played
        inc[I_PLAY] += played
        inc[I_BITRATE_PLAY] += bitrate * played
        inc[I_DROPPED] += dropped
    elif kind == EXIT:
        s[STATUS] = EXITED
        s[BUFFERING_NOW] = bool(event[3])
        inc[I_EXITS] += 1
        inc[I_EXITS_BUFFERING] += event[3]
        inc[I_EXITS_BEFORE_START] += status == JOINING
    elif kind == ERROR:
        s[STATUS] = FAILED
        s[ERROR_CODE] = event[3]
        inc[I_JOIN_FAILURES if status == JOINING else I_PLAYBACK_FAILURES] += 1
    s[INC] = tuple(inc)
    return tuple(s)


def increment_items(state: State) -> list[tuple[tuple[str, str], tuple[int, ...]]]:
    """``(group, increments)`` for each group of a session changed in this interval."""
    inc = state[INC]
    return [(g, inc) for g in groups_of(state[DIMS])]


def viewer_items(state: State) -> list[tuple[tuple[str, str], int]]:
    """``(group, viewer)`` for each group of a session changed in this interval."""
    viewer = state[VIEWER]
    return [(g, viewer) for g in groups_of(state[DIMS])]


def gauge_items(
    state: State, batch_ms: int, cfg: MonitorConfig
) -> list[tuple[tuple[str, str], tuple[int, ...]]]:
    """``(group, gauges)`` for each group of a live session at interval ``batch_ms``
    (nothing for an ended one)."""
    if state[STATUS] in (EXITED, FAILED):
        return []
    buffering, viewed = state[BUFFERING_MS], state[BUFFERING_MS] + state[PLAY_MS]
    threshold = cfg.buffering_threshold
    over = viewed > 0 and buffering * threshold.denominator > threshold.numerator * viewed
    stalled = batch_ms - state[BATCH_MS] >= cfg.stall_ms
    vec = (1, int(over), int(state[BUFFERING_NOW]), int(stalled))
    return [(g, vec) for g in groups_of(state[DIMS])]


def add(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(x + y for x, y in zip(a, b, strict=True))


def sub(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(x - y for x, y in zip(a, b, strict=True))
