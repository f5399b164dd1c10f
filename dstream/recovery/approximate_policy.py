"""``approximateRecovery(maxDivergence, divergence)``'s driver-side choices, layered over the
mode the state runs with (``checkpoint`` or ``auto``; the compatibility table refuses the
others): each interval is stepped from the previous one's *blocks*, cached on disk too, the
restores the tasks made are journaled and restored, and the progress record shows the bound
and the copies. The per-task code and the error bound are in
:mod:`dstream.tasks.approx_state`; the driver's bookkeeping (harvest, restores, pruning) in
:mod:`dstream.streams.approximate`."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dstream.recovery.policy import Persistence, RecoveringState, RecoveryPolicy, RestoreLog
from dstream.tasks.approx_state import l1
from dstream.time import Duration, Time

__all__ = ["ApproxSpec", "ApproximatePolicy", "approx_spec"]


@dataclass(frozen=True)
class ApproxSpec:
    """A user's ``approximateRecovery(maxDivergence, divergence)``."""

    max_divergence: float
    divergence: Callable[[Any, Any], float]
    divergence_name: str


def approx_spec(max_divergence: object, divergence: object, label: str) -> ApproxSpec:
    """Validate a user's choice for the state ``label``."""
    if (
        isinstance(max_divergence, bool)
        or not isinstance(max_divergence, int | float)
        or not math.isfinite(max_divergence)
        or max_divergence < 0
    ):
        raise ValueError(
            f"approximateRecovery(maxDivergence={max_divergence!r}) of {label}: the bound "
            "must be a finite number >= 0 in the units of the divergence (for 'l1' over "
            "counts, how many counts the state may lose in all), e.g. maxDivergence=1000; "
            "0 makes every restore exact"
        )
    if divergence == "l1":
        return ApproxSpec(float(max_divergence), l1, "l1")
    if callable(divergence):
        name = getattr(divergence, "__name__", type(divergence).__name__)
        return ApproxSpec(float(max_divergence), divergence, name)
    raise ValueError(
        f"approximateRecovery(divergence={divergence!r}) of {label}: use 'l1' (numbers, and "
        "tuples, lists or dicts of numbers) or a function(state at the copy or None, state "
        "now or None) -> float"
    )


class ApproximatePolicy(RecoveryPolicy):
    """``base`` (the mode chosen with recoveryStrategy, ``checkpoint`` by default) with
    lost partitions restored from copies within ``spec``'s bound instead of recomputed."""

    kind = "approximate"
    steps_from_blocks = True
    # The tasks read the previous interval's blocks where the executors hold them.
    shim_classes = ("io.dstream.shim.state.StateBlocks",)
    needed_by = "approximateRecovery()"

    def __init__(self, base: RecoveryPolicy, spec: ApproxSpec) -> None:
        mode = base.base if isinstance(base, ApproximatePolicy) else base  # asked again
        super().__init__(mode.every)
        self.base: RecoveryPolicy = mode
        self.spec = spec

    def __repr__(self) -> str:
        return f"ApproximatePolicy({self.base!r}, max_divergence={self.spec.max_divergence})"

    def rebased(self, mode: RecoveryPolicy) -> RecoveryPolicy:
        return ApproximatePolicy(mode, self.spec)

    @property
    def modes(self) -> frozenset[str]:
        return self.base.modes | {self.kind}

    @property
    def approximate(self) -> ApproxSpec:
        return self.spec

    @property
    def in_force(self) -> RecoveryPolicy:
        return self.base.in_force

    def persistence(self, default_copies: int) -> Persistence:
        # On disk too: a block evicted for memory would be restored from its copy, as if lost.
        return Persistence(self.base.persistence(default_copies).copies, disk=True)

    # ---- the base mode's ----------------------------------------------------------------
    @property
    def sweeps_checkpoints(self) -> bool:  # type: ignore[override]
        return self.base.sweeps_checkpoints

    def checkpoint_every(self, default: Duration) -> Duration | None:
        return self.base.checkpoint_every(default)

    @property
    def rebuild_every(self) -> Duration | None:
        return self.base.rebuild_every

    def history_needed(
        self, every: Duration | None, window: Duration | None
    ) -> tuple[Duration, str]:
        return self.base.history_needed(every, window)

    def replay_span(self, every: Duration | None, slide: Duration) -> Duration:
        return self.base.replay_span(every, slide)

    def floor(self, state: RecoveringState) -> Time | None:
        return self.base.floor(state)

    def measured(
        self, state: RecoveringState, write_s: float, nbytes: int, every: Duration
    ) -> None:
        self.base.measured(state, write_s, nbytes, every)

    # ---- the restores: journaled, restored, reported ------------------------------------
    def journal(self, log: RestoreLog | None = None) -> dict[str, Any]:
        saved = self.base.journal(log)
        if log is not None:
            saved["approx_restores"] = log.journal()
        return saved

    def restore(self, saved: dict[str, Any], log: RestoreLog | None = None) -> None:
        self.base.restore(saved, log)
        if log is not None:
            log.restore_journal(saved.get("approx_restores") or {})

    def progress(self, log: RestoreLog | None = None) -> dict[str, Any]:
        entry = self.base.progress(log)
        if log is not None:
            entry["approximateRecovery"] = {
                "maxDivergence": self.spec.max_divergence,
                "divergence": self.spec.divergence_name,
                "copyBytes": log.copy_bytes,
                "restoredPartitions": log.restored,
            }
        return entry
