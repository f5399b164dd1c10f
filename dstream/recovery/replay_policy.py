"""``replay``, for window state only (a window with an inverse): no checkpoint files at all.

Every ``every`` (the window by default) the state is rebuilt from the window's own
per-interval inputs instead of from the previous state, which cuts lineage the way a
checkpoint does. A lost partition, or a restarted driver, rebuilds the window from those
inputs, which the sources keep (the stream's low-water mark is the oldest interval in the
window). Refused for ``updateStateByKey`` and ``track``: their state depends on every
interval since the start (:func:`dstream.recovery.choice.policy_for`)."""

from __future__ import annotations

from dstream.recovery.policy import RecoveringState, RecoveryPolicy
from dstream.time import Duration, Time

__all__ = ["ReplayPolicy"]


class ReplayPolicy(RecoveryPolicy):
    kind = "replay"
    # No checkpoint is written: those left (written before auto chose replay, or by the run
    # a restart read) are swept once none is live.
    sweeps_checkpoints = True

    def __init__(self, window: Duration, every: Duration | None = None) -> None:
        super().__init__(every)
        self.window = window

    def __repr__(self) -> str:
        return f"ReplayPolicy(window={self.window}, every={self.every})"

    def checkpoint_every(self, default: Duration) -> Duration | None:
        return None

    @property
    def rebuild_every(self) -> Duration | None:
        return self.every or self.window

    def history_needed(
        self, every: Duration | None, window: Duration | None
    ) -> tuple[Duration, str]:
        return self.window, "replayed window"

    def replay_span(self, every: Duration | None, slide: Duration) -> Duration:
        # The window, and the interval in progress.
        return self.window + slide

    def floor(self, state: RecoveringState) -> Time | None:
        # The window before the newest completed interval: what a rebuild after it, or
        # after a restart, folds (until a checkpoint is published: auto's before its pick).
        if state.published_ms is None:
            zero = state.zero_time
            if state.completed_ms is not None:
                floor = Time(state.completed_ms) - self.window
                return floor if zero is None else max(floor, zero)
            if state.restored_floor_ms is not None:
                return Time(state.restored_floor_ms)
        return super().floor(state)
