"""A user's ``recoveryStrategy(kind, every, copies)``, validated into its policy."""

from __future__ import annotations

from dstream.recovery.auto_policy import AutoPolicy
from dstream.recovery.checkpoint_policy import CheckpointPolicy
from dstream.recovery.policy import RecoveryPolicy
from dstream.recovery.replay_policy import ReplayPolicy
from dstream.recovery.replicate_policy import ReplicatePolicy
from dstream.time import Duration, to_duration

__all__ = ["KINDS", "SavedStrategy", "policy_for", "policy_from_saved"]

# What recoveryStrategy() accepts, the default first.
KINDS = (CheckpointPolicy.kind, ReplayPolicy.kind, ReplicatePolicy.kind, AutoPolicy.kind)


def policy_for(
    kind: object,
    *,
    slide: Duration,
    window: Duration | None,
    unbounded: str | None,
    label: str,
    every: object = None,
    copies: object = None,
) -> RecoveryPolicy:
    """Validate a user's choice for the state stream ``label`` (``unbounded``: why its state
    cannot be replayed, or None for a window state of length ``window``)."""
    if kind not in KINDS:
        choices = ", ".join(f'"{k}"' for k in KINDS)
        raise ValueError(
            f"{kind!r} is not a recovery strategy of {label}; use one of {choices} "
            "(checkpoint is the default)"
        )
    assert isinstance(kind, str)
    if copies is not None and kind != ReplicatePolicy.kind:
        raise ValueError(
            f'copies= is for "replicate" only, not {kind!r} ({label}); drop it, or use "replicate"'
        )
    replicas = 0
    if kind == ReplicatePolicy.kind:
        wanted = 2 if copies is None else copies
        if not isinstance(wanted, int) or isinstance(wanted, bool) or wanted < 2:
            raise ValueError(
                f'"replicate" of {label} needs copies >= 2 (copies={wanted!r} keeps no '
                'spare); use copies=2, or the "checkpoint" strategy'
            )
        replicas = wanted
    duration = None
    if every is not None:
        duration = to_duration(every, f"{kind} interval of {label}")
        if not duration.is_multiple_of(slide):
            raise ValueError(
                f"every={duration} of {label} must be a multiple of its slide {slide}; "
                f"e.g. every={slide * max(1, round(duration.ms / slide.ms))}"
            )
    if kind == ReplayPolicy.kind:
        if unbounded is not None or window is None:
            raise ValueError(
                f'"replay" cannot rebuild the state of {label}: {unbounded}, so no window of '
                'input rebuilds it; use "checkpoint" (the default) or "replicate"'
            )
        if duration is not None and duration > window:
            raise ValueError(
                f"every={duration} of {label} must be at most the window {window}: a replay "
                f"rebuilds from the window's inputs, so lineage is cut at least once a window; "
                f"use every={window} or less"
            )
        return ReplayPolicy(window, duration)
    if kind == ReplicatePolicy.kind:
        return ReplicatePolicy(replicas, duration)
    if kind == AutoPolicy.kind:
        return AutoPolicy(window if unbounded is None else None, duration)
    return CheckpointPolicy(duration)


class SavedStrategy:
    """The strategy a program saved before the policies recorded (its fields: ``kind``,
    ``every``, ``replicas``, ``window``); dstream.streams.graph_pickle loads it as this."""

    kind: str = CheckpointPolicy.kind
    every: Duration | None = None
    replicas: int | None = None
    window: Duration | None = None


def policy_from_saved(
    saved: SavedStrategy, window: Duration | None, unbounded: str | None
) -> RecoveryPolicy:
    """The policy of a state whose program was saved before the policies (what
    :func:`policy_for` gave for the same choice, already validated then)."""
    if saved.kind == ReplayPolicy.kind:
        replayed = saved.window or window
        assert replayed is not None
        return ReplayPolicy(replayed, saved.every)
    if saved.kind == ReplicatePolicy.kind:
        return ReplicatePolicy(saved.replicas or 2, saved.every)
    if saved.kind == AutoPolicy.kind:
        return AutoPolicy(window if unbounded is None else None, saved.every)
    return CheckpointPolicy(saved.every)
