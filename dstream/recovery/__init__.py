"""How a state stream survives the loss of its state: one policy object per recovery mode.

A state node (:class:`dstream.streams.state_base.StateStream`) keeps its state: each
interval's RDD, the checkpoints written, the partition schedule. *How* that state survives a
lost executor or a driver restart is its policy's to decide, asked through one small
interface (:class:`dstream.recovery.policy.RecoveryPolicy`):

==================  =======================================================================
what it persists    :meth:`~RecoveryPolicy.persistence` (copies in memory, on disk too)
lineage             :meth:`~RecoveryPolicy.is_cut` (rebuilt from the window's inputs)
checkpoints         :meth:`~RecoveryPolicy.checkpoint_every` (None: never)
history it needs    :meth:`~RecoveryPolicy.history_needed`, :meth:`~RecoveryPolicy.floor`
journal / restore   :meth:`~RecoveryPolicy.journal`, :meth:`~RecoveryPolicy.restore`
progress records    :meth:`~RecoveryPolicy.progress`
what it measures    :meth:`~RecoveryPolicy.measured` (``auto``)
what it combines    :mod:`dstream.recovery.compatibility` (one table, checked at start())
==================  =======================================================================

One module per mode: :mod:`~dstream.recovery.checkpoint_policy`,
:mod:`~dstream.recovery.replay_policy`, :mod:`~dstream.recovery.replicate_policy`,
:mod:`~dstream.recovery.auto_policy` (which delegates to the mode it picked) and
:mod:`~dstream.recovery.approximate_policy` (``approximateRecovery``'s driver-side choices,
layered over the mode it runs with; its per-task code is :mod:`dstream.tasks.approx_state`).
:func:`~dstream.recovery.choice.policy_for` turns a
user's ``recoveryStrategy(...)`` into its policy.

Where the package sits: *below* ``streams``, above ``tasks``. The policies are called by
the state nodes on every interval and carry no Spark: they are pure rules over durations,
counts and what the node tells them, so they take the node through a typed protocol they
declare (:class:`dstream.recovery.policy.RecoveringState`) instead of importing it.
Injected from above (``scheduler``), every node would need the engine to hand it its
policy, and a graph built by the api could not answer what it persists or checkpoints
before start(); below, a node holds its policy from the moment the user chooses it, and
the rules stay testable without Spark (tests/unit/test_recovery_*.py).
"""

from dstream.recovery.policy import Persistence, RecoveringState, RecoveryPolicy

__all__ = ["Persistence", "RecoveringState", "RecoveryPolicy"]
