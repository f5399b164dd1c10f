"""How a state stream survives: its recovery policy, and its checkpoint files.

The half of :class:`dstream.streams.state_base.StateStream` that decides nothing itself:
*how* the state survives a loss (what it persists, whether and when it checkpoints or cuts
lineage, what history it needs, what it journals) is its policy's (:mod:`dstream.recovery`),
asked here; and the checkpoint files the policy asks for are written, published, read back
and deleted here (the state_base module docstring draws how checkpoints cut lineage)."""

from __future__ import annotations

import time as _time
from typing import TYPE_CHECKING, Any, ClassVar

from dstream.recovery.approximate_policy import ApproximatePolicy
from dstream.recovery.checkpoint_policy import CheckpointPolicy
from dstream.recovery.choice import policy_for, policy_from_saved
from dstream.recovery.compatibility import refusal
from dstream.recovery.policy import RecoveryPolicy
from dstream.storage.checkpoint import COMPLETE, checkpoint_dir, partition_path, read_partition
from dstream.storage.checkpoint import write_partition as _write_partition
from dstream.storage.filesystem import filesystem_for, publish
from dstream.storage.paths import qualify
from dstream.storage.taskfs import LocalTaskFiles, TaskFiles, task_files_for
from dstream.streams.base import STATE, DStreamCore
from dstream.streams.copartitioned import memory_only
from dstream.time import Duration, Time

if TYPE_CHECKING:
    from pyspark import RDD, StorageLevel

    from dstream.streams.rescale import PartitionSchedule

__all__ = ["RecoverableState"]


class RecoverableState(DStreamCore[Any]):
    """The checkpoint files of a state stream (see :class:`StateStream`)."""

    _schedule: PartitionSchedule
    # Why the state cannot be rebuilt from a window of input (None: it can, see _window).
    _unbounded: ClassVar[str | None] = "its state depends on every interval since the start"
    # How this state survives the loss of its partitions (dstream.recovery).
    _recovery: RecoveryPolicy = CheckpointPolicy()

    _transient: ClassVar[tuple[str, ...]] = (
        "_published_ms",
        "_built_on",
        "_root",
        "_files",
        "_restored_key",
        "_checkpoint_bytes",
        "_checkpoint_bytes_total",
        "_unswept",
        "_completed_ms",
        "_restored_floor_ms",
    )

    def _init_transient(self) -> None:
        super()._init_transient()
        # The checkpoint future intervals are rebuilt from (batch ms), and which checkpoint
        # each remembered interval was built on.
        self._published_ms: int | None = None
        self._built_on: dict[Time, int | None] = {}
        self._root: str | None = None
        # How tasks reach the files under root (chosen by prepare_storage).
        self._files: TaskFiles = LocalTaskFiles()
        # Names this stream's checkpoint directory; a restored stream keeps its old key.
        self._restored_key: str | None = None
        # Bytes of the last checkpoint written (progress records, auto's measure), and of all of
        # them since this driver started.
        self._checkpoint_bytes: int | None = None
        self._checkpoint_bytes_total = 0
        # Checkpoint directories may exist that no live checkpoint accounts for (a replay
        # state sweeps them once none is live; see delete_unused_checkpoints).
        self._unswept = True
        # The newest completed interval (a rescale starts after it; replay's floor).
        self._completed_ms: int | None = None
        # The low-water mark a restart read from the journal (replay: the oldest interval a
        # rebuild may still fold).
        self._restored_floor_ms: int | None = None

    def __setstate__(self, state: dict[str, Any]) -> None:
        # A program saved before the recovery policies: its strategy and approximateRecovery
        # bound were fields of their own (loaded as dstream.recovery's, graph_pickle._MOVED).
        saved, spec = state.pop("_strategy", None), state.pop("_approx", None)
        super().__setstate__(state)
        if saved is not None:
            self._recovery = policy_from_saved(saved, self._window, self._unbounded)
        if spec is not None:
            self._recovery = ApproximatePolicy(self._recovery, spec)

    def _refuse(self, added: str, **names: object) -> None:
        """Raise the compatibility table's error for adding ``added`` to this state's
        recovery modes (dstream.recovery.compatibility)."""
        message = refusal(self._recovery.modes, added, label=self.label, **names)
        if message is not None:
            raise ValueError(message)

    @property
    def completed_ms(self) -> int | None:
        """The newest completed interval (batch ms)."""
        return self._completed_ms

    @property
    def published_ms(self) -> int | None:
        """The newest checkpoint written completely (batch ms): future intervals are rebuilt
        from it (None: none yet)."""
        return self._published_ms

    # ---- the recovery policy (dstream.recovery) -----------------------------------------------
    @property
    def _window(self) -> Duration | None:
        """The window a replay rebuilds this state from (None: it cannot replay)."""
        return None

    @property
    def replay_window(self) -> Duration | None:
        """The window a replay rebuilds this state from (None: it cannot replay)."""
        return self._window

    @property
    def cannot_replay(self) -> str | None:
        """Why the state cannot be rebuilt from a window of input (None: it can)."""
        return self._unbounded

    @property
    def restored_floor_ms(self) -> int | None:
        """The low-water mark a restarted driver read from the journal."""
        return self._restored_floor_ms

    @property
    def recovery(self) -> RecoveryPolicy:
        """How this state survives the loss of its partitions."""
        return self._recovery

    @property
    def recovery_modes(self) -> frozenset[str]:
        """The modes its policy stands for (the compatibility table's keys)."""
        return self._recovery.modes

    def set_strategy(self, kind: object, every: object, copies: object) -> None:
        self._refuse(str(kind), kind=kind)
        self._recovery = self._recovery.rebased(
            policy_for(
                kind,
                slide=self.slide_duration,
                window=self._window,
                unbounded=self._unbounded,
                label=self.label,
                every=every,
                copies=copies,
            )
        )

    def history_needed(self) -> tuple[Duration, str] | None:
        return self._recovery.history_needed(self.checkpoint_every, self._window)

    def _is_cut(self, time: Time) -> bool:
        """replay: whether ``time``'s state is rebuilt from the window's inputs (which cuts
        lineage, as a checkpoint does) instead of stepped from the previous state."""
        zero = self._zero_time
        return zero is not None and self._recovery.is_cut(time - zero)

    def replay_span(self) -> Duration:
        """How far back a rebuild may reach (the policy's: the checkpoint's lag, or the
        window a replay folds)."""
        return self._recovery.replay_span(self.checkpoint_every, self.slide_duration)

    def _persist_level(self) -> StorageLevel | None:
        if self._storage_level == STATE:
            kept = self._recovery.persistence(self._graph.settings.state_replicas)
            return memory_only(kept.copies, kept.disk)
        return self._storage_level

    def _check_settings(self, settings: Any) -> None:
        from dstream.jvm import ShimMissingError, shim_class

        for name in self._recovery.shim_classes:
            try:
                shim_class(self._graph.sc, name)
            except ShimMissingError as exc:
                raise ShimMissingError(
                    exc.path, f"{self._recovery.needed_by} of {self.label}"
                ) from None

    @property
    def checkpoint_every(self) -> Duration | None:
        """How often the state is checkpointed (None: never, under replay)."""
        default = self._checkpoint_interval or self._default_checkpoint_interval()
        return self._recovery.checkpoint_every(default)

    @property
    def _key(self) -> str:
        return self._restored_key if self._restored_key is not None else str(self._id)

    def prepare_storage(self, root: str) -> None:
        # Resolved once (a path without a scheme is on the default file system, as for
        # Spark), so the driver and the tasks name the same files.
        sc = self._graph.sc
        self._root = qualify(root, sc)
        self._files = task_files_for(self._root, sc)

    def _checkpoint_dir(self, time_ms: int) -> str:
        if self._root is None:
            raise RuntimeError(f"{self.label} has no storage directory; start() prepares it")
        return checkpoint_dir(self._root, self._key, time_ms)

    def _write_checkpoint(self, time: Time, rdd: RDD[Any], directory: str) -> bytes:
        """Write ``rdd`` (the state of ``time``) under ``directory``: one file per partition.
        Returns the content of the checkpoint's ``_COMPLETE`` marker (a manifest; empty here:
        each partition file carries its own checksum)."""
        files = self._files
        rdd.mapPartitionsWithIndex(
            lambda i, it: [_write_partition(files, partition_path(directory, i), list(it))]
        ).count()
        return b""

    def _read_checkpoint(self, base_ms: int) -> RDD[Any]:
        """The checkpoint's records, partition i read by partition i of a co-partitioned RDD."""
        directory = self._checkpoint_dir(base_ms)
        marks = self._graph.runtime.marks.get(self._schedule.at(base_ms))
        files = self._files
        return marks.mapPartitionsWithIndex(
            lambda i, _: iter(read_partition(files, partition_path(directory, i))),
            preservesPartitioning=True,
        )

    def checkpoint_now(self, time: Time, rdd: RDD[Any]) -> None:
        """Run by the checkpointer's thread: write, mark complete, publish."""
        directory = self._checkpoint_dir(time.ms)
        fs = filesystem_for(directory, self._graph.sc)
        complete = f"{directory}/{COMPLETE}"
        if not fs.exists(complete):
            began = _time.perf_counter()
            manifest = self._write_checkpoint(time, rdd, directory)
            publish(fs, complete, lambda tmp: fs.write_bytes(tmp, manifest))
            seconds = _time.perf_counter() - began
            self._checkpoint_bytes = sum(f.size for f in fs.list_files(directory))
            self._checkpoint_bytes_total += self._checkpoint_bytes
            every = self.checkpoint_every
            if every is not None:  # auto decides on the write it measured
                self._recovery.measured(self, seconds, self._checkpoint_bytes, every)
        with self._lock:
            if self._published_ms is None or time.ms > self._published_ms:
                self._published_ms = time.ms

    def _live_checkpoints(self) -> set[int]:
        """Checkpoints still needed: the published one and those remembered RDDs were built on."""
        with self._lock:
            live = {ms for ms in self._built_on.values() if ms is not None}
            if self._published_ms is not None:
                live.add(self._published_ms)
        return live

    def delete_unused_checkpoints(self, keep: set[int]) -> None:
        """Delete checkpoints older than the newest live one, unless in ``keep``
        (referenced by a metadata record still on disk)."""
        if self._root is None:
            return
        live = self._live_checkpoints() | keep
        # A policy that writes no checkpoint (replay) sweeps those left (written before
        # auto chose replay, or by a run restored from) once none is live, in one sweep.
        if not live and not (self._recovery.sweeps_checkpoints and self._unswept):
            return
        parent = f"{self._root.rstrip('/')}/state-{self._key}"
        fs = filesystem_for(parent, self._graph.sc)
        newest = max(live, default=None)
        names = fs.list_names(parent) if live or fs.exists(parent) else []
        for name in names:
            if name.isdigit() and int(name) not in live and (newest is None or int(name) < newest):
                fs.delete(f"{parent}/{name}")
        self._unswept = bool(live)
