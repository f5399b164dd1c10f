"""The commit horizon of a receiver stream: up to which interval its blocks can be committed
(their clients forget them) once an interval completes. A driver restarted from the record
of that completion recomputes the intervals after it and, for the windows and states
downstream, those they read: at most ``keep`` (the widest window, or a state's reach back to
its checkpoint) before the next one. A state whose checkpoint falls behind holds the
horizon back with it, so that its rebuild still finds the blocks it needs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from dstream.time import Duration, Time

if TYPE_CHECKING:
    from dstream.streams.state_base import StateStream

__all__ = ["commit_horizon", "states_hold"]


def states_hold(states: Iterable[StateStream], keep: Duration) -> tuple[Time, str] | None:
    """The latest interval whose blocks the states downstream may still need, and the
    state that needs it (None if none holds more than ``keep`` does).

    ``keep`` (the stream's remember duration) allows each state a checkpoint up to its
    replay span (three of its checkpoint intervals) old: a state rebuilt after a restart, or
    after its next checkpoint, folds in the stream's intervals after its last published
    checkpoint, less the windows between them, which ``keep`` covers beyond that span. A
    checkpoint that falls further behind (slow or failing writes) holds the stream's blocks
    back with it: stored, and kept by their clients (which wait at their
    ``max_kept_blocks``), instead of lost to the rebuild."""
    hold: tuple[Time, str] | None = None
    for state in states:
        floor = state.replay_floor()
        if floor is not None and (hold is None or floor + state.replay_span() < hold[0]):
            hold = (floor + state.replay_span(), state.label)
    return None if hold is None else (hold[0] - keep, hold[1])


def commit_horizon(
    time: Time, slide: Duration, keep: Duration, hold: tuple[Time, str] | None
) -> tuple[Time, str | None]:
    """(the interval through which blocks can be committed once ``time`` completed, the
    state holding it back or None); ``hold`` is :func:`states_hold`'s."""
    usual = time + slide - keep
    if hold is None or hold[0] >= usual:
        return usual, None
    return hold
