"""The interface every recovery mode implements, and what it asks of the state it serves."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from dstream.time import Duration, Time

__all__ = ["Persistence", "RecoveringState", "RecoveryPolicy", "RestoreLog"]


@dataclass(frozen=True)
class Persistence:
    """How each interval's state is cached: ``copies`` in executor memory, and on disk too
    (a block evicted for memory is then read back, not lost). ``view``: users are shown an
    uncached view of the cached state (which carries records of the policy's own)."""

    copies: int
    disk: bool = False
    view: bool = False


class RecoveringState(Protocol):
    """What a policy reads of the state node it serves (streams/state_base.py)."""

    @property
    def label(self) -> str: ...
    @property
    def zero_time(self) -> Time | None: ...
    @property
    def published_ms(self) -> int | None: ...
    @property
    def completed_ms(self) -> int | None: ...
    @property
    def restored_floor_ms(self) -> int | None: ...
    @property
    def replay_window(self) -> Duration | None: ...
    @property
    def cannot_replay(self) -> str | None: ...


class RestoreLog(Protocol):
    """approximateRecovery's bookkeeping on the driver (dstream.streams.approximate)."""

    copy_bytes: int

    @property
    def restored(self) -> int: ...
    def journal(self) -> dict[str, list[int]]: ...
    def restore_journal(self, saved: dict[str, list[int]]) -> None: ...


class RecoveryPolicy:
    """How one state survives the loss of its partitions. The defaults are ``checkpoint``'s:
    state files every checkpoint interval, lineage recomputed from the last one."""

    kind: ClassVar[str]
    # Whether the state's interval t is stepped from the *blocks* of t - slide as the
    # executors hold them, not from its lineage (approximateRecovery).
    steps_from_blocks: ClassVar[bool] = False
    # Whether checkpoint directories no live checkpoint accounts for are swept (replay:
    # none is written any more).
    sweeps_checkpoints: ClassVar[bool] = False
    # Classes of the JVM shim the policy's tasks need (checked at start()).
    shim_classes: ClassVar[tuple[str, ...]] = ()
    needed_by: ClassVar[str] = ""  # who needs them, in the error if they are missing

    def __init__(self, every: Duration | None = None) -> None:
        # checkpoint/replicate/auto: the checkpoint interval (None: the stream's default);
        # replay: how often the window is rebuilt from its inputs.
        self.every = every

    def __repr__(self) -> str:
        return f"{type(self).__name__}(every={self.every})"

    # ---- what the user chose and what is in force ---------------------------------------
    @property
    def in_force(self) -> RecoveryPolicy:
        """The policy that decides now (``auto``: the one it picked)."""
        return self

    @property
    def modes(self) -> frozenset[str]:
        """The user's choices this policy stands for (a key of the compatibility table)."""
        return frozenset({self.kind})

    def rebased(self, mode: RecoveryPolicy) -> RecoveryPolicy:
        """This policy with ``mode`` (a user's new recoveryStrategy) as its mode: a mode is
        replaced by it; a policy layered over a mode (approximate) keeps its layer."""
        return mode

    @property
    def approximate(self) -> Any:
        """approximateRecovery's spec (dstream.recovery.approximate_policy.ApproxSpec), or None."""
        return None

    # ---- persist, cut, checkpoint -------------------------------------------------------
    def persistence(self, default_copies: int) -> Persistence:
        """How each interval's state is cached (``default_copies``: state_replicas)."""
        return Persistence(default_copies)

    def copies(self, default: int) -> int:
        return self.persistence(default).copies

    def checkpoint_every(self, default: Duration) -> Duration | None:
        """How often the state is checkpointed (None: never); ``default``: the stream's."""
        return self.every or default

    @property
    def rebuild_every(self) -> Duration | None:
        """replay: how often the state is rebuilt from the window's inputs."""
        return None

    def is_cut(self, since_zero: Duration) -> bool:
        """Whether the state of the interval ``since_zero`` after the start is rebuilt from
        the window's inputs (which cuts lineage) instead of stepped from the previous one."""
        every = self.rebuild_every
        return every is not None and since_zero.ms > 0 and since_zero.ms % every.ms == 0

    # ---- what history the state needs ---------------------------------------------------
    def history_needed(
        self, every: Duration | None, window: Duration | None
    ) -> tuple[Duration, str]:
        """The input history a recomputation reads, and what it is called (max_history)."""
        assert every is not None
        return every, "checkpoint interval"

    def replay_span(self, every: Duration | None, slide: Duration) -> Duration:
        """How far back a rebuild may reach: the checkpoint lags by up to one interval plus
        the time its write takes; three intervals leave room for a slow write."""
        assert every is not None
        return every * 3

    def floor(self, state: RecoveringState) -> Time | None:
        """The oldest input interval a rebuild of ``state`` may still fold (exclusive): the
        published checkpoint, or the start."""
        published = state.published_ms
        return Time(published) if published is not None else state.zero_time

    # ---- measure, journal, restore, report ----------------------------------------------
    def measured(
        self, state: RecoveringState, write_s: float, nbytes: int, every: Duration
    ) -> None:
        """A checkpoint of ``nbytes`` took ``write_s`` to write (``auto`` decides on it)."""

    def journal(self, log: RestoreLog | None = None) -> dict[str, Any]:
        """What this policy adds to the state's metadata record."""
        return {"strategy": self.in_force.kind, "auto": None}

    def restore(self, saved: dict[str, Any], log: RestoreLog | None = None) -> None:
        """Take back what :meth:`journal` recorded (a journal of any earlier version)."""

    def progress(self, log: RestoreLog | None = None) -> dict[str, Any]:
        """This policy's fields of the state's progress record."""
        return {"strategy": self.in_force.kind, "strategyReason": None}
