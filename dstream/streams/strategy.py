"""How one state stream survives the loss of its state: StreamScope's three recovery
strategies (its Sec. 4.4), chosen per stream on D-Streams' terms.

``checkpoint`` (the default)
    The state is written to files every checkpoint interval, asynchronously, and lineage
    restarts at the last one (see :mod:`dstream.streams.state_base`). A lost partition is
    recomputed from that checkpoint plus the intervals since; a restarted driver reads it.
``replay``
    For window state only (a window with an inverse): no checkpoint files at all. Every
    ``every`` (the window by default) the state is rebuilt from the window's own
    per-interval inputs instead of from the previous state, which cuts lineage the way a
    checkpoint does. A lost partition, or a restarted driver, rebuilds the window from those
    inputs, which the sources keep (the stream's low-water mark is the oldest interval in the
    window). Refused for ``updateStateByKey`` and ``track``: their state depends on every
    interval since the start.
``replicate``
    Each interval's state is kept in memory on ``copies`` executors: a lost executor's
    partitions are read from a copy, not recomputed. A checkpoint ten times less often than
    by default still bounds lineage and is what a restarted driver reads (the copies die with
    the application).
``auto``
    Starts as ``checkpoint``; once a checkpoint has been written, StreamScope's rule of
    thumb on the measured write: checkpointing is preferred while it is cheap, replay when it
    is not and a replay costs about what restoring a checkpoint does. A window state's
    checkpoint holds each interval's partials still in the window, which is what a replay
    recomputes, so for a window the rule reduces to the checkpoint's measured cost: replay
    once a write takes more than :data:`AUTO_OVERHEAD` of the time between checkpoints.
    State that cannot replay stays on ``checkpoint``. ``auto`` never picks ``replicate``: it
    buys memory for time, a trade only the user can make.
"""

from __future__ import annotations

from dataclasses import dataclass

from dstream.time import Duration, to_duration

__all__ = ["AUTO_OVERHEAD", "KINDS", "RecoveryStrategy", "auto_choice", "strategy_for"]

KINDS = ("checkpoint", "replay", "replicate", "auto")
# auto: replay once a checkpoint write takes more than this share of the checkpoint interval.
AUTO_OVERHEAD = 0.05
# replicate: checkpoints this many times less often than the default interval.
REPLICATE_CHECKPOINT_FACTOR = 10


@dataclass(frozen=True)
class RecoveryStrategy:
    kind: str = "checkpoint"
    # checkpoint/replicate/auto: the checkpoint interval (None: the stream's default, or
    # for replicate ten times it); replay: how often the window is rebuilt from its inputs.
    every: Duration | None = None
    # replicate: copies of each interval's state in executor memory.
    replicas: int | None = None
    # replay: the window the state covers (rebuilt every `every`, or every window).
    window: Duration | None = None

    def checkpoint_every(self, default: Duration) -> Duration | None:
        """How often this state is checkpointed (None: never)."""
        if self.kind == "replay":
            return None
        if self.every is not None:
            return self.every
        if self.kind == "replicate":
            return default * REPLICATE_CHECKPOINT_FACTOR
        return default

    @property
    def rebuild_every(self) -> Duration | None:
        """replay: how often the state is rebuilt from the window's inputs."""
        if self.kind != "replay":
            return None
        return self.every or self.window

    def is_cut(self, since_zero: Duration) -> bool:
        """Whether the state of the interval ``since_zero`` after the start is rebuilt from
        the window's inputs (replay) rather than stepped from the previous state."""
        every = self.rebuild_every
        return every is not None and since_zero.ms > 0 and since_zero.ms % every.ms == 0

    def copies(self, default: int) -> int:
        """Copies of each interval's state in memory (``default``: state_replicas)."""
        return self.replicas if self.kind == "replicate" and self.replicas else default


def strategy_for(
    kind: object,
    *,
    slide: Duration,
    window: Duration | None,
    unbounded: str | None,
    label: str,
    every: object = None,
    copies: object = None,
) -> RecoveryStrategy:
    """Validate a user's choice for the state stream ``label`` (``unbounded``: why its state
    cannot be replayed, or None for a window state of length ``window``)."""
    if kind not in KINDS:
        choices = ", ".join(f'"{k}"' for k in KINDS)
        raise ValueError(
            f"{kind!r} is not a recovery strategy of {label}; use one of {choices} "
            "(checkpoint is the default)"
        )
    assert isinstance(kind, str)
    if copies is not None and kind != "replicate":
        raise ValueError(
            f'copies= is for "replicate" only, not {kind!r} ({label}); drop it, or use "replicate"'
        )
    replicas: int | None = None
    if kind == "replicate":
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
    if kind == "replay":
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
    return RecoveryStrategy(kind, duration, replicas, window if kind == "replay" else None)


def auto_choice(
    can_replay: bool,
    why_not: str | None,
    *,
    write_s: float,
    checkpoint_bytes: int,
    every: Duration,
) -> tuple[str, str]:
    """What ``auto`` picks after a checkpoint of ``checkpoint_bytes`` took ``write_s`` to
    write, checkpoints coming every ``every``: the strategy and the reason, in words."""
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
