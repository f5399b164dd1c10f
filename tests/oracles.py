"""Plain-Python oracles the tests compare the engine with."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

__all__ = ["session_init", "session_update", "track_oracle"]


def session_init(key: Any, event: str) -> int:
    """The sessions example's initialize: a session starts with one event."""
    return 1


def session_update(key: Any, state: int, event: str) -> int | None:
    """The sessions example's update: count events; ``"exit"`` ends the session."""
    return None if event == "exit" else state + 1


def track_oracle(
    batches: Sequence[Sequence[tuple[Hashable, Any]]],
    timeout_ms: int,
    initialize: Callable[[Any, Any], Any] = session_init,
    update: Callable[[Any, Any, Any], Any] = session_update,
    slide_ms: int = 1000,
) -> list[dict[Any, Any]]:
    """``track()`` as one dict: each interval's events applied in input order, then the keys
    without an event for ``timeout_ms`` dropped. The state after each interval."""
    state: dict[Any, Any] = {}
    last: dict[Any, int] = {}
    out = []
    for i, events in enumerate(batches, start=1):
        t = i * slide_ms
        for key, event in events:
            old = state.get(key)
            new = initialize(key, event) if old is None else update(key, old, event)
            if new is None:
                state.pop(key, None)
            else:
                state[key] = new
            last[key] = t
        for key in [k for k in state if last[k] <= t - timeout_ms]:
            del state[key]
        out.append(dict(state))
    return out
