"""``replicate``: each interval's state is kept in memory on ``copies`` executors, so a lost
executor's partitions are read from a copy, not recomputed. A checkpoint ten times less
often than by default still bounds lineage and is what a restarted driver reads (the copies
die with the application)."""

from __future__ import annotations

from dstream.recovery.policy import Persistence, RecoveryPolicy
from dstream.time import Duration

__all__ = ["REPLICATE_CHECKPOINT_FACTOR", "ReplicatePolicy"]

# Checkpoints this many times less often than the default interval.
REPLICATE_CHECKPOINT_FACTOR = 10


class ReplicatePolicy(RecoveryPolicy):
    kind = "replicate"

    def __init__(self, replicas: int, every: Duration | None = None) -> None:
        super().__init__(every)
        self.replicas = replicas

    def __repr__(self) -> str:
        return f"ReplicatePolicy(replicas={self.replicas}, every={self.every})"

    def persistence(self, default_copies: int) -> Persistence:
        return Persistence(self.replicas)

    def checkpoint_every(self, default: Duration) -> Duration | None:
        return self.every or default * REPLICATE_CHECKPOINT_FACTOR
