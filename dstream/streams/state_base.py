"""What every state stream shares: asynchronous checkpoints, and lineage that stops at them.

A state stream's RDD of interval t is normally built from its RDD of t - slide (``step``).
Every checkpoint interval, once that interval's jobs are done, a background job writes the
state RDD's partitions to files (the RDD is immutable and cached, so later intervals go on
using it meanwhile). When the write has finished, the *next* interval is built instead from
the checkpoint, read partition by partition, plus the few intervals since (``rebuild``)::

    step:     state(t-1) ──► state(t) ──► state(t+1) ...          lineage grows by one
    rebuild:  checkpoint(c) + inputs of (c, t] ──► state(t)        lineage restarts at c

So lineage depth and the driver's bookkeeping stay bounded by the checkpoint interval plus
the checkpoint's own lag, forever. After a driver restart the same ``rebuild`` restores the
state from the last checkpoint recorded in the metadata journal, recomputing the intervals
since it from durable input.

This replaces Spark's ``RDD.checkpoint()``: that call must precede the first job on the RDD,
and then the first job that touches it writes the checkpoint synchronously, inside that
interval's output job (Spark's ``doCheckpoint`` at the end of ``runJob``) — the opposite of
asynchronous.
"""

from __future__ import annotations

import logging
import time as _time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from dstream.functions import UserFunction
from dstream.storage.checkpoint import COMPLETE, checkpoint_dir, partition_path, read_partition
from dstream.storage.checkpoint import write_partition as _write_partition
from dstream.storage.filesystem import filesystem_for, publish
from dstream.storage.paths import qualify
from dstream.storage.taskfs import LocalTaskFiles, TaskFiles, task_files_for
from dstream.streams.base import STATE, DStreamCore
from dstream.streams.copartitioned import memory_only
from dstream.streams.fidelity import Loss
from dstream.streams.rescale import PartitionSchedule, regroup
from dstream.streams.strategy import RecoveryStrategy, auto_choice, strategy_for
from dstream.streams.tentative_pass import Ledger, Saved, section_counter
from dstream.time import Duration, Time

if TYPE_CHECKING:
    from pyspark import RDD, StorageLevel

    from dstream.streams.tentative_pass import StateChain, TentativePass

__all__ = ["StateStream"]

log = logging.getLogger(__name__)


class StateStream(DStreamCore[Any]):
    is_state = True
    needs_storage = True

    def __init__(
        self,
        parents: Sequence[DStreamCore[Any]],
        *,
        name: str,
        num_partitions: int,
        user_functions: Iterable[UserFunction] = (),
    ) -> None:
        super().__init__(parents[0].graph, parents, name=name, user_functions=user_functions)
        # The partition count of each interval's state (rescale() adds steps).
        self._schedule = PartitionSchedule(num_partitions)
        # The count the program's code asks for (numPartitions=, or rescale() before start):
        # journaled, so that a restarted driver tells a changed program (rescale to its new
        # count) from the same program (keep the counts run-time rescales gave the state).
        self._declared_partitions: int | None = num_partitions
        self._storage_level = STATE
        self._root: str | None = None
        # How this state survives the loss of its partitions (see dstream.streams.strategy).
        self._strategy = RecoveryStrategy()

    # Why the state cannot be rebuilt from a window of input (None: it can, see _window).
    _unbounded: ClassVar[str | None] = "its state depends on every interval since the start"
    # Why the state cannot change its partition count (None: it can, see rescale()).
    fixed_partitions: ClassVar[str | None] = "its partitions are not (key, state) records"
    # (None in a graph saved before the declared count was: the same program as the journal's.)
    _declared_partitions: int | None = None

    _transient: ClassVar[tuple[str, ...]] = (
        "_published_ms",
        "_built_on",
        "_restoring",
        "_root",
        "_files",
        "_restored_key",
        "_auto",
        "_completed_ms",
        "_restored_floor_ms",
        "_checkpoint_bytes",
        "_checkpoint_bytes_total",
        "_wanted_partitions",
        "_unswept",
        "_ledger",
        "_replicated",
    )

    def _init_transient(self) -> None:
        super()._init_transient()
        # The checkpoint future intervals are rebuilt from (batch ms), and which checkpoint
        # each remembered interval was built on.
        self._published_ms: int | None = None
        self._built_on: dict[Time, int | None] = {}
        # After a driver restart, old inputs may (must) be recomputed from durable input.
        self._restoring = False
        self._root = None
        # How tasks reach the files under root (chosen by prepare_storage).
        self._files: TaskFiles = LocalTaskFiles()
        # Names this stream's checkpoint directory; a restored stream keeps its old key.
        self._restored_key: str | None = None
        # What "auto" picked and why, once a checkpoint was measured (or a restart read it).
        self._auto: tuple[str, str] | None = None
        # The newest completed interval, and the low-water mark a restart read from the
        # journal (replay: the oldest interval a rebuild may still fold).
        self._completed_ms: int | None = None
        self._restored_floor_ms: int | None = None
        # Bytes of the last checkpoint written (progress records, "auto"), and of all of
        # them since this driver started.
        self._checkpoint_bytes: int | None = None
        self._checkpoint_bytes_total = 0
        # A restored program that asked for another partition count than the journal's.
        self._wanted_partitions: int | None = None
        # Checkpoint directories may exist that no live checkpoint accounts for (a replay
        # state sweeps them once none is live; see delete_unused_checkpoints).
        self._unswept = True
        # The records each partition folded in, per interval (tentative results' rates).
        self._ledger = Ledger()
        # Partitions the replica budget gives a second copy in memory (see
        # dstream.scheduler.replicas): applied to each interval's state from now on.
        self._replicated: frozenset[int] = frozenset()

    # ---- what other packages read of a state (the scheduler, tentative results) -------------
    @property
    def published_ms(self) -> int | None:
        """The newest checkpoint written completely (batch ms): future intervals are rebuilt
        from it (None: none yet)."""
        return self._published_ms

    def built_on(self, time: Time) -> int | None:
        """The checkpoint (batch ms) the remembered state of ``time`` was built on (None: none,
        or not remembered)."""
        with self._lock:
            return self._built_on.get(time)

    @property
    def schedule(self) -> PartitionSchedule:
        """The partition count of each interval's state (``rescale()`` adds steps)."""
        return self._schedule

    @property
    def ledger(self) -> Ledger:
        """The records each partition folded in, per interval (tentative results' rates)."""
        return self._ledger

    @property
    def replicated(self) -> frozenset[int]:
        """The partitions kept in a second in-memory copy (the replica budget's choice)."""
        return self._replicated

    def replicate_partitions(self, partitions: Iterable[int]) -> None:
        """Keep a second in-memory copy of these partitions of every interval's state from
        the next one on (the replica budget, dstream.scheduler.replicas); the others go back
        to one copy."""
        self._replicated = frozenset(partitions)

    # ---- what a state stream implements --------------------------------------------------
    def _step(self, time: Time, previous: RDD[Any]) -> RDD[Any]:
        """State of ``time`` from the state of ``time - slide``."""
        raise NotImplementedError

    def _rebuild(self, time: Time, base_ms: int | None) -> RDD[Any] | None:
        """State of ``time`` from the checkpoint at ``base_ms`` (None: from the start), or None
        if an input it needs is no longer remembered."""
        raise NotImplementedError

    def _write_checkpoint(self, time: Time, rdd: RDD[Any], directory: str) -> bytes:
        """Write ``rdd`` (the state of ``time``) under ``directory``: one file per partition.
        Returns the content of the checkpoint's ``_COMPLETE`` marker (a manifest; empty here:
        each partition file carries its own checksum)."""
        files = self._files
        rdd.mapPartitionsWithIndex(
            lambda i, it: [_write_partition(files, partition_path(directory, i), list(it))]
        ).count()
        return b""

    # ---- the mechanism ---------------------------------------------------------------------
    @property
    def _key(self) -> str:
        return self._restored_key if self._restored_key is not None else str(self._id)

    # ---- elastic partitions -------------------------------------------------------------------
    @property
    def partitions(self) -> int:
        """The partition count of the newest step (fixed for track())."""
        return self._schedule.latest

    def partitions_at(self, time: Time) -> int:
        return self._schedule.at(time.ms)

    def rescale(self, count: object) -> Time | None:
        """``count`` partitions from the next interval not generated yet (before start: from
        the first). Returns that interval (None before start)."""
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise ValueError(
                f"rescale({count!r}) of {self.label}: the partition count must be a "
                "positive int, e.g. rescale(8)"
            )
        if self.fixed_partitions is not None:
            raise ValueError(
                f"rescale({count}) of {self.label}: {self.fixed_partitions}; its partition "
                "count is fixed (numPartitions= when it is made)"
            )
        with self._lock:
            if self._zero_time is None:
                self._schedule.start_with(count)
                self._declared_partitions = count
                return None
            newest = max(self._generated, default=self._zero_time)
            if self._completed_ms is not None:
                newest = max(newest, Time(self._completed_ms))
            start = newest + self.slide_duration
            self._schedule.add(start.ms, count)
        log.info("%s: %d partitions from interval %s", self.label, count, start)
        self._warm_up(self._schedule.at((start - self.slide_duration).ms), count)
        return start

    def _warm_up(self, old: int, new: int) -> None:
        """Run, in the caller's thread and before the rescale interval, what the interval
        would otherwise do first: the section marks of the new count (a small job and a
        shuffle) and one regroup of them (which ships the shim jar to the executors and
        loads its classes there)."""
        marks = self._graph.runtime.marks
        marks.get(new).count()
        regroup(self._graph.sc, marks.get(old), old, new).count()

    def _fit(self, rdd: RDD[Any], count: int, have: int | None = None) -> RDD[Any]:
        """``rdd`` (hash-partitioned (key, value) records) in ``count`` partitions: itself,
        or regrouped (narrowly when the counts allow; see dstream.streams.rescale)."""
        if have is None:
            have = rdd.partitioner.numPartitions if rdd.partitioner else rdd.getNumPartitions()
        if have == count:
            return rdd
        return regroup(self._graph.sc, rdd, have, count)

    # ---- the recovery strategy ----------------------------------------------------------------
    @property
    def _window(self) -> Duration | None:
        """The window a replay rebuilds this state from (None: it cannot replay)."""
        return None

    def set_strategy(self, kind: object, every: object, copies: object) -> None:
        self._strategy = strategy_for(
            kind,
            slide=self.slide_duration,
            window=self._window,
            unbounded=self._unbounded,
            label=self.label,
            every=every,
            copies=copies,
        )

    @property
    def _kind(self) -> str:
        """The strategy in force: "auto" is "checkpoint" until a checkpoint was measured."""
        kind = self._strategy.kind
        if kind == "auto":
            return self._auto[0] if self._auto is not None else "checkpoint"
        return kind

    @property
    def checkpoint_every(self) -> Duration | None:
        """How often the state is checkpointed (None: never, under replay)."""
        if self._kind == "replay":
            return None
        default = self._checkpoint_interval or self._default_checkpoint_interval()
        return self._strategy.checkpoint_every(default)

    def history_needed(self) -> tuple[Duration, str] | None:
        every = self.checkpoint_every
        if every is not None:
            return every, "checkpoint interval"
        assert self._window is not None
        return self._window, "replayed window"

    def _is_cut(self, time: Time) -> bool:
        """replay: whether ``time``'s state is rebuilt from the window's inputs (which cuts
        lineage, as a checkpoint does) instead of stepped from the previous state."""
        if self._kind != "replay" or self._zero_time is None:
            return False
        strategy = self._strategy
        if strategy.kind == "auto":
            assert self._window is not None
            strategy = RecoveryStrategy("replay", window=self._window)
        return strategy.is_cut(time - self._zero_time)

    def replay_span(self) -> Duration:
        """How far back a rebuild may reach: the checkpoint lags by up to one interval plus the
        time its write takes; three intervals leaves room for a slow write. Under replay, the
        window (and the interval in progress)."""
        every = self.checkpoint_every
        if every is None:
            assert self._window is not None
            return self._window + self.slide_duration
        return every * 3

    def _persist_level(self) -> StorageLevel | None:
        if self._storage_level == STATE:
            return memory_only(self._strategy.copies(self._graph.settings.state_replicas))
        return self._storage_level

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

    def _compute(self, time: Time) -> RDD[Any] | None:
        if self._zero_time is None:
            raise RuntimeError(f"{self.label} computed before start()")
        if self._wanted_partitions is not None:
            self._schedule.restart_with(time.ms, self._wanted_partitions)
            self._wanted_partitions = None
        previous_time = time - self.slide_duration
        # Only a remembered previous state is stepped from: computing it afresh would rebuild
        # every older state in turn. Without it (first interval, after a restart, or if it
        # was forgotten) the state is rebuilt from the last checkpoint.
        previous = self._generated.get(previous_time)
        with self._lock:
            base = self._published_ms
        rdd: RDD[Any] | None
        if self._is_cut(time) and (cut := self._rebuild(time, None)) is not None:
            # replay: the window from its inputs; no checkpoint is read again.
            with self._lock:
                self._published_ms = None
            rdd, built_on = cut, None
        elif previous is not None and (
            self._steps_from_blocks or self._built_on.get(previous_time) == base
        ):
            rdd, built_on = self._step(time, previous), base
        else:
            rdd, built_on = self._rebuild(time, base), base
            if rdd is None:
                if previous is None:
                    raise RuntimeError(
                        f"{self.label} cannot rebuild interval {time}: the inputs since its "
                        f"checkpoint at {base} ms are gone and no previous state exists"
                    )
                # Inputs since the new checkpoint are no longer remembered: keep stepping.
                rdd, built_on = self._step(time, previous), self._built_on.get(previous_time)
        self._built_on[time] = built_on
        self._restoring = False
        if self._replicated:
            from dstream.streams.surviving import replicating

            rdd = replicating(rdd, self._replicated)
        return rdd

    def _replay_times(self, time: Time, base_ms: int | None) -> list[Time] | None:
        """The intervals a rebuild of ``time`` from the checkpoint at ``base_ms`` (None: from
        the start) folds in, or None if the input of one of them is no longer available."""
        assert self._zero_time is not None
        since = self._zero_time if base_ms is None else Time(base_ms)
        slide = self.slide_duration.ms
        times = [Time(ms) for ms in range(since.ms + slide, time.ms + 1, slide)]
        return times if self._available(self._parents[0], times, time) else None

    def _available(self, stream: DStreamCore[Any], times: Iterable[Time], now: Time) -> bool:
        """Whether ``stream``'s RDDs of ``times`` can be used by a rebuild at ``now``: remembered
        (normal operation), or recomputable from durable input (restoring)."""
        if self._restoring:
            return True
        return all(t == now or stream._can_compute(t) for t in times)

    def _read_checkpoint(self, base_ms: int) -> RDD[Any]:
        """The checkpoint's records, partition i read by partition i of a co-partitioned RDD."""
        directory = self._checkpoint_dir(base_ms)
        marks = self._graph.runtime.marks.get(self._schedule.at(base_ms))
        files = self._files
        return marks.mapPartitionsWithIndex(
            lambda i, _: iter(read_partition(files, partition_path(directory, i))),
            preservesPartitioning=True,
        )

    def _on_batch_completed(self, time: Time) -> None:
        with self._lock:
            if self._completed_ms is None or time.ms > self._completed_ms:
                self._completed_ms = time.ms
        every = self.checkpoint_every
        if self._zero_time is None or every is None or (time - self._zero_time).ms % every.ms:
            return
        rdd = self.state_rdd(time)
        if rdd is not None:
            self._submit_checkpoint(time, rdd)

    def _submit_checkpoint(self, time: Time, rdd: RDD[Any]) -> bool:
        """Hand the state of ``time`` to the background checkpointer (False: one of this
        stream's is still in flight, or none runs)."""
        checkpointer = self._graph.runtime.checkpointer
        if checkpointer is None:  # a state stream's context has one
            return False
        return checkpointer.submit(self, time, rdd)

    @property
    def _steps_from_blocks(self) -> bool:
        """Whether each interval's state is built from the cached blocks of the previous one,
        not from its lineage (which then never grows, so a published checkpoint need not
        cut it: the checkpoint is there for restarts)."""
        return False

    def state_rdd(self, time: Time) -> RDD[Any] | None:
        """The cached RDD that holds the state of ``time`` (what is checkpointed): the RDD of
        the interval, unless the stream shows users a view of it."""
        return self._generated.get(time)

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
            if self._strategy.kind == "auto" and self._auto is None:
                self._choose(seconds, self._checkpoint_bytes)
        with self._lock:
            if self._published_ms is None or time.ms > self._published_ms:
                self._published_ms = time.ms

    def _choose(self, write_s: float, checkpoint_bytes: int) -> None:
        """auto: StreamScope's rule on the checkpoint just measured (once)."""
        every = self.checkpoint_every
        assert every is not None
        self._auto = auto_choice(
            self._window is not None,
            self._unbounded,
            write_s=write_s,
            checkpoint_bytes=checkpoint_bytes,
            every=every,
        )
        log.info("%s: recovery strategy auto picked %s: %s", self.label, *self._auto)

    def replay_floor(self) -> Time | None:
        """A rebuild folds in only its parent's intervals after this time (the published
        checkpoint, or the start): older input is never read again by this state. Input
        streams keep what they need to recompute an interval until every state downstream
        has passed it (see FileInputDStream). Under replay, the window before the newest
        completed interval: what a rebuild after it, or after a restart, folds."""
        with self._lock:
            if self._kind == "replay" and self._published_ms is None:
                assert self._window is not None
                if self._completed_ms is not None:
                    floor = Time(self._completed_ms) - self._window
                    return floor if self._zero_time is None else max(floor, self._zero_time)
                if self._restored_floor_ms is not None:
                    return Time(self._restored_floor_ms)
            if self._published_ms is not None:
                return Time(self._published_ms)
        return self._zero_time

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
        # Under replay no checkpoint is written any more: once none is live, those left
        # (written before auto chose replay, or by a run restored from) go, in one sweep.
        if not live and not (self._kind == "replay" and self._unswept):
            return
        parent = f"{self._root.rstrip('/')}/state-{self._key}"
        fs = filesystem_for(parent, self._graph.sc)
        newest = max(live, default=None)
        names = fs.list_names(parent) if live or fs.exists(parent) else []
        for name in names:
            if name.isdigit() and int(name) not in live and (newest is None or int(name) < newest):
                fs.delete(f"{parent}/{name}")
        self._unswept = bool(live)

    def _can_compute(self, time: Time) -> bool:
        # A state's past RDD is rebuilt only through compute()'s own rules.
        return time in self._generated

    def _clear_metadata(self, time: Time) -> None:
        super()._clear_metadata(time)
        with self._lock:
            for t in [t for t in self._built_on if t not in self._generated]:
                del self._built_on[t]

    # ---- progress records --------------------------------------------------------------------
    def progress(self, time: Time, cached_bytes: dict[int, int]) -> dict[str, Any]:
        """This state's entry in the progress record of batch ``time``."""
        from dstream.time import human_time

        with self._lock:
            rdd = self.state_rdd(time)
            base = self._built_on.get(time)
            published = self._published_ms
        since = base if base is not None else (self._zero_time.ms if self._zero_time else None)
        depth = None if since is None else (time.ms - since) // self.slide_duration.ms
        return {
            "name": self._user_name or self.label,
            "operator": self.label,
            "lastCheckpoint": human_time(published),
            "lastCheckpointMs": published,
            "lineageDepth": depth,
            "partitions": self._schedule.at(time.ms),
            "strategy": self._kind,
            "strategyReason": None if self._auto is None else self._auto[1],
            "lastCheckpointBytes": self._checkpoint_bytes,
            "memoryUsedBytes": None if rdd is None else cached_bytes.get(rdd.id()),
        }

    # ---- tentative results (dstream.streams.tentative_pass) --------------------------------------
    _loss_rule = "state"

    def _tentative_step(
        self, time: Time, previous: RDD[Any], times: list[Time], saved: Saved | None
    ) -> RDD[Any]:
        """The state of ``time`` from ``previous`` (a state of ``times[0] - slide``) and the
        input of ``times``; a lost block's record in ``previous`` is read from ``saved``."""
        raise NotImplementedError(f"{self.label} gives no tentative results")

    def _tentative_loss(self, time: Time, chain: StateChain) -> Loss:
        """The loss of this state's tentative RDD of ``time``: per partition, the records it
        holds and the share of them missing (PPA's rate and information loss)."""
        raise NotImplementedError(f"{self.label} gives no tentative results")

    def _tentative_loss_in(self, time: Time, tentative: TentativePass, rdd: RDD[Any]) -> Loss:
        return self._tentative_loss(time, tentative.chains[self._id])

    def _tentative(self, time: Time, tentative: TentativePass) -> RDD[Any] | None:
        from dstream.streams.surviving import surviving

        chain = tentative.chains[self._id]
        slide = self.slide_duration
        newest = chain.newest
        if chain.recovered and (newest is None or newest[0] <= chain.exact_time or chain.missing):
            # The lost partitions are cached again: the exact state, and the intervals since.
            exact = self.state_rdd(chain.exact_time)
            if exact is None:
                return None
            times = [
                chain.exact_time + slide * (i + 1)
                for i in range((time - chain.exact_time).ms // slide.ms)
            ]
            previous, saved = surviving(exact), self._read_back_from(chain, time)
            chain.missing = {}
        elif newest is not None and newest[0] == time - slide:
            previous, saved, times = newest[1], None, [time]
        else:
            exact = self.state_rdd(chain.exact_time)
            if exact is None or chain.exact_time != time - slide:
                return None
            previous, saved = surviving(exact, chain.lost), self._read_back_from(chain, time)
            times = [time]
        rdd = self._tentative_step(time, previous, times, saved)
        rdd.persist(memory_only())
        tentative.persisted.append(rdd)
        if saved is not None:
            tentative.read_back.append((self._id, rdd))
        if newest is not None:
            tentative.superseded.append(newest[1])
        chain.newest = (time, rdd)
        return rdd

    def _read_back_from(self, chain: StateChain, time: Time) -> Saved:
        """Where the tentative state of ``time`` reads a lost block back from (the chain's
        checkpoint), its tasks noting which blocks they found lost: more than the chain
        knows when another executor's loss is not reported yet (two killed at once)."""
        directory = (
            None if chain.checkpoint_ms is None else self._checkpoint_dir(chain.checkpoint_ms)
        )
        notes = self._graph.tentative.accumulator()
        return Saved(self._files, directory, notes, self._id, time.ms)

    def _section_counter(
        self, times: list[Time], saved: Saved | None = None
    ) -> Callable[[int], Callable[[list[list[Any]]], None]] | None:
        """The merge tasks' report of each interval's records per partition (for tentative
        results' rates), when any output gives tentative results (not in a tentative pass)."""
        notes = self._graph.tentative
        if not notes.active or saved is not None:
            return None
        return section_counter(notes.accumulator(), self._id, [u.ms for u in times])

    # ---- what the metadata journal records -----------------------------------------------
    def _shape(self) -> dict[str, Any]:
        """What a restored checkpoint must agree with to be reused by changed code."""
        shape = {"kind": type(self).__name__, "slide_ms": self.slide_duration.ms}
        if self.fixed_partitions is not None:  # an elastic state's count is journaled
            shape["partitions"] = self.partitions
        return shape

    def journal_state(self) -> dict[str, Any] | None:
        floor = self.replay_floor()
        return {
            "checkpoint_ms": self._published_ms,
            "key": self._key,
            "shape": self._shape(),
            "strategy": self._kind,
            "auto": None if self._auto is None else list(self._auto),
            "floor_ms": None if floor is None else floor.ms,
            "partitions": self._schedule.steps(),
            "declared_partitions": self._declared_partitions,
        }

    def restore_state(self, state: dict[str, Any]) -> None:
        theirs, ours = dict(state["shape"]), self._shape()
        # An elastic state's count is its journaled schedule, not its shape (a journal
        # written before states could rescale has it in the shape only).
        old_count = None
        if self.fixed_partitions is None:
            old_count = theirs.pop("partitions", None)
        if theirs != ours:
            diff = ", ".join(
                f"{k}: {theirs.get(k)!r} then, {ours.get(k)!r} now"
                for k in sorted(set(theirs) | set(ours))
                if theirs.get(k) != ours.get(k)
            )
            raise ValueError(
                f"the state of {self.label} cannot be restored into the changed program "
                f"({diff}); keep those settings, or start from a new checkpoint directory"
            )
        self._published_ms = state.get("checkpoint_ms")
        self._restored_key = state["key"]
        self._restored_floor_ms = state.get("floor_ms")
        steps = state.get("partitions") or ([(0, old_count)] if old_count else None)
        if steps and self.fixed_partitions is None:
            # The counts the intervals had, run-time rescales (and the elastic policy's)
            # included: SPATE's rule, a rescale is never rolled back by a restart. Only a
            # program whose code asks for another count than the one that wrote the journal
            # rescales, at its first interval. (A journal from before the declared count was
            # recorded: its first step is the count that program started with.)
            declared_then = int(state.get("declared_partitions") or steps[0][1])
            self._schedule.replace(steps)
            now = self._declared_partitions or declared_then
            if now not in (declared_then, self._schedule.latest):
                self._wanted_partitions = now
        auto = state.get("auto")
        if self._strategy.kind == "auto" and auto is not None:
            self._auto = (auto[0], auto[1])
        self._restoring = True
