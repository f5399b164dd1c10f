"""``checkpoint`` (the default): the state is written to files every checkpoint interval,
asynchronously, and lineage restarts at the last one (see :mod:`dstream.streams.state_base`).
A lost partition is recomputed from that checkpoint plus the intervals since; a restarted
driver reads it. Everything it does is :class:`~dstream.recovery.policy.RecoveryPolicy`'s
default."""

from __future__ import annotations

from dstream.recovery.policy import RecoveryPolicy

__all__ = ["CheckpointPolicy"]


class CheckpointPolicy(RecoveryPolicy):
    kind = "checkpoint"
