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
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from dstream.functions import UserFunction
from dstream.recovery.checkpoint_policy import CheckpointPolicy
from dstream.recovery.policy import RecoveryPolicy, RestoreLog
from dstream.streams.base import STATE, DStreamCore
from dstream.streams.copartitioned import memory_only
from dstream.streams.elastic_state import ElasticState
from dstream.streams.fidelity import Loss
from dstream.streams.rescale import PartitionSchedule
from dstream.streams.tentative_pass import Ledger, Saved, section_counter
from dstream.streams.tentative_pass import current as current_pass
from dstream.time import Duration, Time

if TYPE_CHECKING:
    from pyspark import RDD

    from dstream.streams.copartitioned import SectionMarks
    from dstream.streams.tentative_pass import StateChain, TentativePass

__all__ = ["StateStream"]

log = logging.getLogger(__name__)


class StateStream(ElasticState):
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
        self._schedule = PartitionSchedule(num_partitions)
        self._declared_partitions = num_partitions
        self._storage_level = STATE
        # How this state survives the loss of its partitions (see dstream.recovery).
        self._recovery: RecoveryPolicy = CheckpointPolicy()

    _transient: ClassVar[tuple[str, ...]] = (
        "_restoring",
        "_ledger",
        "_replicated",
    )

    def _init_transient(self) -> None:
        super()._init_transient()
        # After a driver restart, old inputs may (must) be recomputed from durable input.
        self._restoring = False
        # The records each partition folded in, per interval (tentative results' rates).
        self._ledger = Ledger()
        # Partitions the replica budget gives a second copy in memory (see
        # dstream.scheduler.replicas): applied to each interval's state from now on.
        self._replicated: frozenset[int] = frozenset()

    # ---- what other packages read of a state (the scheduler, tentative results) -------------
    def built_on(self, time: Time) -> int | None:
        """The checkpoint (batch ms) the remembered state of ``time`` was built on (None: none,
        or not remembered)."""
        with self._lock:
            return self._built_on.get(time)

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

    def _compute(self, time: Time) -> RDD[Any] | None:
        if self._zero_time is None:
            raise RuntimeError(f"{self.label} computed before start()")
        self._rescale_wanted(time)
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
            # Stepped from the previous state's cached blocks, its lineage never grows, so a
            # published checkpoint need not cut it: the checkpoint is there for restarts.
            self._recovery.steps_from_blocks or self._built_on.get(previous_time) == base
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

    def _submit_checkpoint(self, time: Time, rdd: RDD[Any]) -> bool:
        """Hand the state of ``time`` to the background checkpointer (False: one of this
        stream's is still in flight, or none runs)."""
        checkpointer = self._graph.runtime.checkpointer
        if checkpointer is None:  # a state stream's context has one
            return False
        return checkpointer.submit(self, time, rdd)

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

    def state_rdd(self, time: Time) -> RDD[Any] | None:
        """The cached RDD that holds the state of ``time`` (what is checkpointed): the RDD of
        the interval, unless the stream shows users a view of it."""
        return self._generated.get(time)

    def replay_floor(self) -> Time | None:
        """A rebuild folds in only its parent's intervals after this time (the published
        checkpoint, or the start; under replay, the window before the newest completed
        interval): older input is never read again by this state. Input streams keep what
        they need to recompute an interval until every state downstream has passed it (see
        FileInputDStream)."""
        with self._lock:
            return self._recovery.floor(self)

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
            "lastCheckpointBytes": self._checkpoint_bytes,
            "memoryUsedBytes": None if rdd is None else cached_bytes.get(rdd.id()),
            **self._recovery.progress(self._restore_log),
        }

    @property
    def _restore_log(self) -> RestoreLog | None:
        """What a policy that restores from copies journals and reports (approximateRecovery)."""
        return None

    # ---- tentative results (dstream.streams.tentative_pass) --------------------------------------
    _loss_rule = "state"

    def _section_marks(self) -> SectionMarks:
        """The section marks a merge's union reads: a tentative pass's own (see
        :class:`~dstream.streams.tentative_pass.TentativePass`), else the program's."""
        tentative = current_pass()
        if tentative is not None and tentative.marks is not None:
            return tentative.marks
        return self._graph.runtime.marks

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
            times = _since(chain.exact_time, time, slide)
            previous, saved = surviving(exact), self._read_back_from(chain, time)
            chain.missing = {}
        elif newest is not None and newest[0] < time:
            # On the newest tentative state, with the input of every interval since: the
            # controller skips an interval whose exact results all came first, and those a
            # newer one overtook while a pass ran (newest first; #61 item 5).
            previous, saved, times = newest[1], None, _since(newest[0], time, slide)
        else:
            exact = self.state_rdd(chain.exact_time)
            if exact is None or chain.exact_time >= time:
                return None
            previous, saved = surviving(exact, chain.lost), self._read_back_from(chain, time)
            times = _since(chain.exact_time, time, slide)
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
            "floor_ms": None if floor is None else floor.ms,
            **self._journal_schedule(),
            **self._recovery.journal(self._restore_log),
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
        self._restore_schedule(state, old_count)
        self._recovery.restore(state, self._restore_log)
        self._restoring = True


def _since(after: Time, upto: Time, slide: Duration) -> list[Time]:
    """The intervals of a stream sliding by ``slide`` after ``after``, up to ``upto``."""
    return [after + slide * (i + 1) for i in range((upto - after).ms // slide.ms)]
