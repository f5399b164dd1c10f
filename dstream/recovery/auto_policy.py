"""``auto``: starts as ``checkpoint``; once a checkpoint has been written, StreamScope's rule
of thumb on the measured write (its Sec. 4.4), and from then on it delegates to the mode it
picked.

Checkpointing is preferred while it is cheap, replay when it is not and a replay costs about
what restoring a checkpoint does. A window state's checkpoint holds each interval's partials
still in the window, which is what a replay recomputes, so for a window the rule reduces to
the checkpoint's measured cost: replay once a write takes more than :data:`AUTO_OVERHEAD` of
the time between checkpoints. State that cannot replay stays on ``checkpoint``. ``auto``
never picks ``replicate``: it buys memory for time, a trade only the user can make.
"""

from __future__ import annotations

import logging
from typing import Any

from dstream.recovery.checkpoint_policy import CheckpointPolicy
from dstream.recovery.policy import Persistence, RecoveringState, RecoveryPolicy, RestoreLog
from dstream.recovery.replay_policy import ReplayPolicy
from dstream.time import Duration, Time

__all__ = ["AUTO_OVERHEAD", "AutoPolicy", "auto_choice"]

log = logging.getLogger(__name__)

# Replay once a checkpoint write takes more than this share of the checkpoint interval.
AUTO_OVERHEAD = 0.05


def auto_choice(
    can_replay: bool,
    why_not: str | None,
    *,
    write_s: float,
    checkpoint_bytes: int,
    every: Duration,
) -> tuple[str, str]:
    """What ``auto`` picks after a checkpoint of ``checkpoint_bytes`` took ``write_s`` to
    write, checkpoints coming every ``every``: the mode and the reason, in words."""
    share = write_s / (every.ms / 1000)
    measured = (
        f"a checkpoint of {checkpoint_bytes / 1e6:.1f} MB took {write_s:.2f} s, "
        f"{share:.0%} of the {every} between checkpoints"
    )
    if not can_replay:
        return "checkpoint", f"{measured}; replay cannot rebuild it ({why_not})"
    if share > AUTO_OVERHEAD:
        return "replay", (
            f"{measured}, more than {AUTO_OVERHEAD:.0%}; a replay refolds the same "
            "per-interval partials from the window's input"
        )
    return "checkpoint", f"{measured}, at most {AUTO_OVERHEAD:.0%}: checkpoints are cheap"


class AutoPolicy(RecoveryPolicy):
    kind = "auto"

    def __init__(self, window: Duration | None, every: Duration | None = None) -> None:
        super().__init__(every)
        # The window a replay would rebuild (None: the state cannot replay).
        self.window = window
        # What auto picked and why, once a checkpoint was measured (or a restart read it).
        self.choice: tuple[str, str] | None = None

    def __repr__(self) -> str:
        return f"AutoPolicy(window={self.window}, every={self.every}, choice={self.choice})"

    def __getstate__(self) -> dict[str, Any]:
        # The pick is journaled with each interval, not saved with the program: a restarted
        # driver takes it from the journal (restore()).
        return {**self.__dict__, "choice": None}

    @property
    def in_force(self) -> RecoveryPolicy:
        if self.choice is not None and self.choice[0] == "replay":
            assert self.window is not None
            return ReplayPolicy(self.window)
        return CheckpointPolicy(self.every)

    # ---- delegated to the mode in force -------------------------------------------------
    @property
    def sweeps_checkpoints(self) -> bool:  # type: ignore[override]
        return self.in_force.sweeps_checkpoints

    def persistence(self, default_copies: int) -> Persistence:
        return self.in_force.persistence(default_copies)

    def checkpoint_every(self, default: Duration) -> Duration | None:
        return self.in_force.checkpoint_every(default)

    @property
    def rebuild_every(self) -> Duration | None:
        return self.in_force.rebuild_every

    def history_needed(
        self, every: Duration | None, window: Duration | None
    ) -> tuple[Duration, str]:
        return self.in_force.history_needed(every, window)

    def replay_span(self, every: Duration | None, slide: Duration) -> Duration:
        return self.in_force.replay_span(every, slide)

    def floor(self, state: RecoveringState) -> Time | None:
        return self.in_force.floor(state)

    # ---- its own: the measurement, and the pick journaled ---------------------------------
    def measured(
        self, state: RecoveringState, write_s: float, nbytes: int, every: Duration
    ) -> None:
        if self.choice is not None:  # once
            return
        self.choice = auto_choice(
            state.replay_window is not None,
            state.cannot_replay,
            write_s=write_s,
            checkpoint_bytes=nbytes,
            every=every,
        )
        log.info("%s: recovery strategy auto picked %s: %s", state.label, *self.choice)

    def journal(self, log: RestoreLog | None = None) -> dict[str, Any]:
        return {
            "strategy": self.in_force.kind,
            "auto": None if self.choice is None else list(self.choice),
        }

    def restore(self, saved: dict[str, Any], log: RestoreLog | None = None) -> None:
        # Journals have always written the pick as a [mode, reason] list.
        auto = saved.get("auto")
        if auto is not None:
            self.choice = (auto[0], auto[1])

    def progress(self, log: RestoreLog | None = None) -> dict[str, Any]:
        return {
            "strategy": self.in_force.kind,
            "strategyReason": None if self.choice is None else self.choice[1],
        }
