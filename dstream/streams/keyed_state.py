"""Keyed state carried from interval to interval: ``updateStateByKey`` and ``track``.

Both keep one hash partitioner for every interval (a key stays in the same partition), so
the state of interval t is built from the state of t - slide and the new records by a
narrow, partition-by-partition union: only the new records are shuffled.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar

from dstream.functions import UserFunction
from dstream.recovery.approximate_policy import ApproximatePolicy, ApproxSpec, approx_spec
from dstream.storage.checkpoint import COMPLETE
from dstream.storage.filesystem import filesystem_for
from dstream.storage.snapshots import decode_manifest, encode_manifest
from dstream.streams.approximate import Approximation
from dstream.streams.base import DStreamCore
from dstream.streams.copartitioned import memory_only, partition_by, sectioned_union
from dstream.streams.fidelity import Loss
from dstream.streams.rescale import (
    PartitionSchedule,
    keeps_whole_parents,
    partition_of,
    regroup_unfiltered,
)
from dstream.streams.state_base import StateStream
from dstream.streams.tentative_pass import substitution
from dstream.tasks import approx_state
from dstream.tasks.approx_state import (
    ApproxTask,
    CopyStore,
    copy_root,
    drop_meta,
    merge_approximate,
)
from dstream.tasks.bad_record_notes import StateNotes
from dstream.tasks.state_merge import merge_update_state, sections
from dstream.tasks.track_state import (
    SnapshotRef,
    TrackDelta,
    TrackFunctions,
    changes,
    compact,
    count,
    fold,
    fold_approximate,
    snapshot_path,
    view,
)
from dstream.time import Duration, Time

if TYPE_CHECKING:
    from pyspark import RDD

    from dstream.streams.tentative_pass import Saved, StateChain

__all__ = ["StateDStream", "TaggedEvents", "TrackDStream", "TrackView"]


def _tag_positions(split: int, records: Iterable[tuple[Any, Any]]) -> Iterator[tuple[Any, Any]]:
    """``(k, v)`` -> ``(k, ((split, position), v))``: the input order of each key's values,
    so they can be put back in that order after the shuffle."""
    for position, (key, value) in enumerate(records):
        yield key, ((split, position), value)


class TaggedEvents(DStreamCore[Any]):
    """The parent's pairs of each interval, tagged with their input position and hash
    partitioned into the state's partitions (the one shuffle of a state update)."""

    def __init__(self, parent: DStreamCore[Any], num_partitions: int, name: str) -> None:
        super().__init__(parent.graph, [parent], name=name)
        self._partitions = num_partitions
        # The state's own schedule (set by the state): both change count at one interval.
        self._schedule = PartitionSchedule(num_partitions)
        self._storage_level = memory_only()

    def _compute(self, time: Time) -> RDD[Any] | None:
        rdd = self._parents[0]._get_or_compute(time)
        if rdd is None:
            return None
        count = self._schedule.at(time.ms)
        return partition_by(rdd.mapPartitionsWithIndex(_tag_positions), count)


class ApproximatedState(StateStream):
    """What ``updateStateByKey`` and ``track`` share under ``approximateRecovery()``: the
    user's bound, the restores the driver harvests and journals, the copies it prunes, the
    settings it needs, and interval ``t`` built from the *blocks* of ``t - slide`` (see
    :mod:`dstream.streams.approximate`; the tasks' side is each state's own)."""

    _transient: ClassVar[tuple[str, ...]] = ("_approximation", "_pruned_at", "_held")

    @property
    def approximate(self) -> ApproxSpec | None:
        """``approximateRecovery()``'s bound, if it was asked for (None: exact recovery)."""
        return self._recovery.approximate

    def _init_transient(self) -> None:
        super()._init_transient()
        self._approximation: Approximation | None = None
        self._pruned_at: int | None = None  # the checkpoint the copies were last pruned at
        self._held: set[Time] = set()  # states pinned until their checkpoint is written

    # ---- approximateRecovery -----------------------------------------------------------------
    def set_approximate(self, max_divergence: object, divergence: object) -> None:
        spec = approx_spec(max_divergence, divergence, self.label)
        self._refuse(ApproximatePolicy.kind)
        self._recovery = ApproximatePolicy(self._recovery, spec)

    @property
    def _tracker(self) -> Approximation:
        if self._approximation is None:
            self._approximation = Approximation(self._graph.sc, self._id)
        return self._approximation

    @property
    def _restore_log(self) -> Approximation:
        return self._tracker

    def _before_interval(self, time: Time) -> None:
        """Interval ``time`` reads the blocks of ``time - slide``: make those no task has made
        yet (an interval no output read), so that a missing block means a lost one."""
        if not self._recovery.steps_from_blocks:
            return
        previous = time - self.slide_duration
        state = self.state_rdd(previous)
        if state is None:
            return
        missing = sorted(set(range(state.getNumPartitions())) - self._tracker.computed(previous.ms))
        if missing:
            self._graph.sc.runJob(state, lambda records: [], missing)

    def _approx_persist(self) -> Any:
        kept = self._recovery.persistence(self._graph.settings.state_replicas)
        return memory_only(kept.copies, kept.disk)

    def _approx_task(self, times: list[Time]) -> ApproxTask:
        spec = self._recovery.approximate
        assert spec is not None and self._root is not None
        wanted = {u.ms for u in times}
        restores = {ms: r for ms, r in self._tracker.restores.items() if ms in wanted}
        return ApproxTask(
            self._id,
            spec.max_divergence,
            self.partitions,
            self.slide_duration.ms,
            spec.divergence,
            CopyStore(self._files, copy_root(self._root, self._key)),
            restores,
            approx_state.MIN_BASE_BYTES,
            approx_state.MAX_DELTAS,
        )

    def _on_batch_completed(self, time: Time) -> None:
        self._tracker.harvest(time.ms, self.label)  # (nothing to harvest but under it)
        super()._on_batch_completed(time)

    def _submit_checkpoint(self, time: Time, rdd: RDD[Any]) -> bool:
        if not self._recovery.steps_from_blocks:
            return super()._submit_checkpoint(time, rdd)
        # The state of `time` stays cached until its checkpoint is written: recomputed, a
        # partition whose previous block is gone by then would be restored from its copy,
        # and the checkpoint would hold that restore instead of the state the stream went on
        # from (track() moves its deltas onto the snapshot as if they were the same).
        with self._lock:
            self._pins[time] += 1
            self._held.add(time)
        submitted = super()._submit_checkpoint(time, rdd)
        if not submitted:
            self._release(lambda t: t == time)
        return submitted

    def checkpoint_now(self, time: Time, rdd: RDD[Any]) -> None:
        super().checkpoint_now(time, rdd)
        self._release(lambda t: t <= time)  # written: what it held, and any a skipped one held

    def _release(self, which: Callable[[Time], bool]) -> None:
        with self._lock:
            times = [t for t in self._held if which(t)]
            self._held.difference_update(times)
        for t in times:
            self.unpin(t)

    def delete_unused_checkpoints(self, keep: set[int]) -> None:
        super().delete_unused_checkpoints(keep)
        if self.approximate is None or self._root is None or self._published_ms is None:
            return
        # A restart rebuilds from the oldest checkpoint a record still on disk names: the
        # restores before it are never replayed again, nor are the copies only they read.
        self._tracker.forget_restores_upto(min(keep | {self._published_ms}))
        if self._pruned_at != self._published_ms:  # once a checkpoint, not every interval
            self._pruned_at = self._published_ms
            self._prune_copies()

    def _prune_copies(self) -> None:
        """Delete the copy files no restore can read any more: in each partition, those
        older than its newest base at or before the oldest copy a journaled restore read
        (a restarted driver replays those restores) — or, with none, its newest base."""
        assert self._root is not None
        directory = copy_root(self._root, self._key)
        fs = filesystem_for(directory, self._graph.sc)
        needed: dict[int, int] = {}
        for restored in self._tracker.restores.values():
            for partition, copy_ms in restored.items():
                if copy_ms >= 0:
                    needed[partition] = min(needed.get(partition, copy_ms), copy_ms)
        store = CopyStore(self._files, directory)
        for split in range(self.partitions):
            files = store.copies(split)
            upto = needed.get(split)
            bases = [ms for ms, kind in files if kind == "base" and (upto is None or ms <= upto)]
            if not bases:
                continue
            for ms, kind in files:
                if ms < bases[-1]:
                    fs.delete(f"{directory}/{split:05d}/{ms:013d}.{kind}")


class StateDStream(ApproximatedState):
    """``updateStateByKey``: every key with a state or new values gets
    ``update(new values, old state)`` each interval."""

    def __init__(
        self,
        events: TaggedEvents,
        update_func: Callable[[list[Any], Any], Any],
        initial: RDD[Any] | None,
        user_functions: Iterable[UserFunction],
    ) -> None:
        super().__init__(
            [events],
            name="updateStateByKey",
            num_partitions=events._partitions,
            user_functions=user_functions,
        )
        self._update = update_func
        self._initial: RDD[Any] | None = initial
        events._schedule = self._schedule

    # The initial RDD exists only in the driver that made it (a restart uses checkpoints).
    # Under approximateRecovery, _internal holds each interval's state with its META records
    # (what is cached and checkpointed; users see it without them) and _approximation the
    # driver's bookkeeping (the restores it journals are restored with the state).
    _transient: ClassVar[tuple[str, ...]] = ("_initial", "_internal")
    _unbounded: ClassVar[str | None] = (
        "updateStateByKey keeps each key's state from every interval since the start"
    )
    fixed_partitions: ClassVar[str | None] = None  # (key, state) records: rescale() works

    def _init_transient(self) -> None:
        super()._init_transient()
        self._initial = None
        self._internal: dict[Time, RDD[Any]] = {}

    def _parent_remember_duration(self) -> Duration | None:
        return (self._remember_duration or self.slide_duration) + self.replay_span()

    def _persist_level(self) -> Any:
        # Under approximateRecovery users get a view (not cached) of the cached state.
        return None if self.approximate is not None else super()._persist_level()

    def _compute(self, time: Time) -> RDD[Any] | None:
        rdd = super()._compute(time)
        if self.approximate is None or rdd is None:
            return rdd
        rdd.persist(self._approx_persist())
        self._internal[time] = rdd
        return rdd.mapPartitions(drop_meta, preservesPartitioning=True)

    def state_rdd(self, time: Time) -> RDD[Any] | None:
        if self.approximate is None:
            return super().state_rdd(time)
        return self._internal.get(time)

    def _approximate_merge(self, union: RDD[Any], times: list[Time]) -> RDD[Any]:
        task, update, millis = self._approx_task(times), self._update, [u.ms for u in times]
        notes = self._tracker.accumulator()
        quarantine, label, stream = self._graph.quarantine, self.label, self._id
        acc = quarantine.accumulator() if quarantine.active else None

        def merge_partition(split: int, records: Iterable[Any]) -> Iterator[Any]:
            bad = None if acc is None else StateNotes(acc, label, split, stream)
            on_error = None if bad is None else bad.note
            yield from merge_approximate(split, records, update, millis, task, notes, on_error)
            if bad is not None:
                bad.send()

        return union.mapPartitionsWithIndex(merge_partition, True)

    def _clear_metadata(self, time: Time) -> None:
        super()._clear_metadata(time)
        with self._lock:
            for t in [t for t in self._internal if t not in self._generated]:
                self._internal.pop(t).unpersist(blocking=False)

    def _cached_rdds(self) -> list[RDD[Any]]:
        return [*super()._cached_rdds(), *self._internal.values()]

    def _merge(
        self,
        time: Time,
        state: list[tuple[RDD[Any], int]],
        times: list[Time],
        saved: Saved | None = None,
    ) -> RDD[Any]:
        """State of ``time``: ``state`` (an RDD and its partition count, or nothing) with
        the events of ``times`` folded in, all in the partition count of ``time`` (a state
        or an interval of another count is regrouped first: a rescale). ``saved``: where a
        tentative pass reads a lost block back from."""
        events = self._parents[0]
        count = self._schedule.at(time.ms)
        # A split of the state leaves the sibling's keys for the merge to skip (one Python
        # pass over the state fewer than a filtering regroup: bench/engine/rescale.py); a
        # merge of partitions keeps every key it reads, so its merge hashes none of them.
        sc, unfiltered = self._graph.sc, False
        previous: list[RDD[Any]] = []
        for old_state, have in state:
            regrouped: RDD[Any] | None = None
            if have != count:
                regrouped = regroup_unfiltered(sc, old_state, have, count)
            siblings = regrouped is not None and not keeps_whole_parents(have, count)
            unfiltered = unfiltered or siblings
            previous.append(regrouped or self._fit(old_state, count, have))
        groups = [previous]
        for u in times:
            rdd = events._get_or_compute(u)
            groups.append([] if rdd is None else [self._fit(rdd, count, self._schedule.at(u.ms))])
        update, intervals = self._update, len(times)
        union = sectioned_union(self._section_marks(), count, groups)
        if self.approximate is not None:
            return self._approximate_merge(union, times)
        quarantine = self._graph.quarantine
        wrap, counter = substitution(saved), self._section_counter(times, saved)
        if not unfiltered and not quarantine.active and wrap is None and counter is None:
            return union.mapPartitions(lambda it: merge_update_state(it, update, intervals), True)
        acc = quarantine.accumulator() if quarantine.active else None
        label, millis, stream = self.label, [u.ms for u in times], self._id

        def merge_partition(split: int, records: Iterable[Any]) -> Iterator[Any]:
            def own(key: Any) -> bool:
                return partition_of(key, count) == split

            notes = None if acc is None else (StateNotes(acc, label, split, stream), millis)
            if wrap is not None:
                records = wrap(split, records)
            heard = None if counter is None else counter(split)
            return merge_update_state(
                records, update, intervals, own if unfiltered else None, notes, heard
            )

        return union.mapPartitionsWithIndex(merge_partition, True)

    def _step(self, time: Time, previous: RDD[Any]) -> RDD[Any]:
        before = self._schedule.at((time - self.slide_duration).ms)
        if self.approximate is not None:
            # The previous state's blocks as the executors hold them, not its lineage.
            from dstream.streams.surviving import surviving

            previous = surviving(self._internal[time - self.slide_duration])
        return self._merge(time, [(previous, before)], [time])

    def _tentative_step(
        self, time: Time, previous: RDD[Any], times: list[Time], saved: Saved | None
    ) -> RDD[Any]:
        if self.approximate is not None:
            raise NotImplementedError(
                f"{self.label} restores its own lost partitions (approximateRecovery)"
            )
        count = self._schedule.at(time.ms)
        return self._merge(time, [(previous, count)], times, saved)

    def _tentative_loss(self, time: Time, chain: StateChain) -> Loss:
        # Every interval since the start is in the state: a lost partition read back from
        # the checkpoint lacks the intervals after it, up to the last exact state.
        slide = self.slide_duration.ms
        rates, lost = [], []
        for p in range(self._schedule.at(time.ms)):
            held = self._ledger.since(p, None, time.ms, slide)
            missing = 0.0
            if p in chain.missing:
                missing = self._ledger.since(p, chain.checkpoint_ms, chain.exact_time.ms, slide)
            rates.append(held)
            lost.append(min(1.0, missing / held) if held > 0 else float(p in chain.missing))
        return Loss(tuple(rates), tuple(lost))

    def _rebuild(self, time: Time, base_ms: int | None) -> RDD[Any] | None:
        times = self._replay_times(time, base_ms)
        if times is None:
            return None
        state: list[tuple[RDD[Any], int]] = []
        if base_ms is not None:
            state = [(self._read_checkpoint(base_ms), self._schedule.at(base_ms))]
        elif self._initial is not None:
            initial = partition_by(self._initial, self._schedule.at(0))
            state = [(initial, self._schedule.at(0))]
        return self._merge(time, state, times)


class TrackDStream(ApproximatedState):
    """``track``'s state: one ``(partition, TrackDelta)`` record per partition per interval,
    over snapshot files that the asynchronous checkpoint (a compaction) renews (see
    :mod:`dstream.tasks.track_state` for why)."""

    def __init__(
        self,
        events: TaggedEvents,
        functions: TrackFunctions,
        user_functions: Iterable[UserFunction],
    ) -> None:
        super().__init__(
            [events],
            name="track",
            num_partitions=events._partitions,
            user_functions=user_functions,
        )
        self._fns = functions
        events._schedule = self._schedule

    # The SHA-256 of each partition's snapshot, per checkpoint (batch ms): from the
    # compaction that wrote them, or read back from the checkpoint's manifest.
    _transient: ClassVar[tuple[str, ...]] = ("_digests",)
    _unbounded: ClassVar[str | None] = (
        "track() keeps each key's state from every interval since the start (until its timeout)"
    )
    fixed_partitions: ClassVar[str | None] = (
        "track()'s partitions are snapshot files and deltas, one per partition"
    )

    def _init_transient(self) -> None:
        super()._init_transient()
        self._digests: dict[int, list[str]] = {}

    def _parent_remember_duration(self) -> Duration | None:
        return (self._remember_duration or self.slide_duration) + self.replay_span()

    def _snapshots(self, base_ms: int) -> list[SnapshotRef]:
        """The snapshots of the checkpoint at ``base_ms``, with the digests their writer
        recorded: tasks open a snapshot only if its content still matches."""
        directory = self._checkpoint_dir(base_ms)
        with self._lock:
            digests = self._digests.get(base_ms)
        if digests is None:
            manifest = f"{directory}/{COMPLETE}"
            data = filesystem_for(manifest, self._graph.sc).read_bytes(manifest)
            digests = decode_manifest(data, manifest, self.partitions)
            with self._lock:
                self._digests[base_ms] = digests
        return [SnapshotRef(snapshot_path(directory, i, d), d) for i, d in enumerate(digests)]

    def _fold(self, previous: RDD[Any] | None, base_ms: int | None, times: list[Time]) -> RDD[Any]:
        events = self._parents[0]
        groups: list[list[RDD[Any]]] = [[] if previous is None else [previous]]
        for u in times:
            rdd = events._get_or_compute(u)
            groups.append([] if rdd is None else [rdd])
        fns, millis, files = self._fns, [u.ms for u in times], self._files
        snapshots = None if base_ms is None else self._snapshots(base_ms)
        quarantine, label, stream = self._graph.quarantine, self.label, self._id
        acc = quarantine.accumulator() if quarantine.active else None
        approx = None if self.approximate is None else self._approx_task(times)
        said = None if approx is None else self._tracker.accumulator()

        def fold_partition(split: int, records: Iterable[Any]) -> Iterator[tuple[int, TrackDelta]]:
            parts = sections(records, len(millis) + 1)
            intervals = list(zip(millis, parts[1:], strict=True))
            base = None if snapshots is None else snapshots[split]
            notes = None if acc is None else StateNotes(acc, label, split, stream)
            if approx is not None:
                yield (
                    split,
                    fold_approximate(
                        split, parts[0], base_ms, base, intervals, fns, approx, files, notes, said
                    ),
                )
                return
            previous_delta = parts[0][0][1] if parts[0] else None
            yield split, fold(split, previous_delta, base_ms, base, intervals, fns, files, notes)

        union = sectioned_union(self._graph.runtime.marks, self.partitions, groups)
        return union.mapPartitionsWithIndex(fold_partition, preservesPartitioning=True)

    def _step(self, time: Time, previous: RDD[Any]) -> RDD[Any]:
        if self.approximate is None:
            return self._fold(previous, self._built_on.get(time - self.slide_duration), [time])
        # The previous deltas as the executors hold them, not their lineage; each task moves
        # its delta onto the newest snapshot itself (fold_approximate), folding nothing again.
        from dstream.streams.surviving import surviving

        with self._lock:
            base = self._published_ms
        return self._fold(surviving(previous), base, [time])

    def _rebuild(self, time: Time, base_ms: int | None) -> RDD[Any] | None:
        times = self._replay_times(time, base_ms)
        return None if times is None else self._fold(None, base_ms, times)

    def _shape(self) -> dict[str, Any]:
        return {**super()._shape(), "timeout_ms": self._fns.timeout_ms}

    def _write_checkpoint(self, time: Time, rdd: RDD[Any], directory: str) -> bytes:
        # The checkpoint of track() is a compaction: snapshot + delta -> a new snapshot. Its
        # manifest records each new snapshot's digest.
        if self.approximate is not None:
            # The deltas the stream went on from, as the executors hold them: a block lost
            # since is not compacted (restored, it would not be the chain that moves onto
            # this snapshot), and this checkpoint fails; the next one is taken as usual.
            from dstream.streams.surviving import surviving

            rdd = surviving(rdd).filter(lambda pd: type(pd[0]) is not approx_state.LostBlock)
        written = dict(rdd.map(lambda pd: compact(pd[1], directory)).collect())
        missing = sorted(set(range(self.partitions)) - set(written))
        if missing:
            raise RuntimeError(
                f"{self.label}: the compaction at {time} wrote no snapshot for partitions "
                f"{missing}; the checkpoint is not marked complete"
            )
        digests = [written[i].sha256 for i in range(self.partitions)]
        with self._lock:
            self._digests[time.ms] = digests
            live = self._live_checkpoints() | {time.ms}
            for ms in [ms for ms in self._digests if ms not in live]:
                del self._digests[ms]  # read back from its manifest if ever needed again
        return encode_manifest(digests)


class TrackView(DStreamCore[Any]):
    """The stream ``track()`` returns: ``(key, state)`` for every live key."""

    _loss_rule = "narrow"

    def __init__(self, state: TrackDStream) -> None:
        super().__init__(state.graph, [state], name="track")
        self._state_stream = state
        self._checkpoint_target = state

    def _compute(self, time: Time) -> RDD[Any] | None:
        deltas = self._parents[0]._get_or_compute(time)
        if deltas is None:
            return None
        return deltas.mapPartitions(lambda it: (kv for _, d in it for kv in view(d)), True)

    def count_node(self) -> DStreamCore[int]:
        """Live keys each interval, from the snapshots' recorded sizes and the deltas: costs
        what the changed keys cost, not what all keys cost (``track(...).count()``)."""
        from dstream.streams.transformed import TransformedDStream

        return TransformedDStream(
            [self._state_stream],
            lambda _t, rdds: (
                rdds[0].map(lambda pd: (None, count(pd[1]))).reduceByKey(operator.add, 1).values()
            ),
            name="count",
        )

    def changes_node(self) -> DStreamCore[tuple[Any, Any]]:
        """``(key, new state)`` of the keys that changed in each interval; ``(key, None)``
        for keys removed by ``update`` or by their timeout (``track(...).changes()``)."""
        from dstream.streams.transformed import TransformedDStream

        return TransformedDStream(
            [self._state_stream],
            lambda _t, rdds: rdds[0].mapPartitions(
                lambda it: (kv for _, d in it for kv in changes(d)), True
            ),
            name="changes",
        )

    @property
    def _directory(self) -> str | None:
        """Where the state's snapshots are written (known once started)."""
        if self._state_stream._root is None:
            return None
        return f"{self._state_stream._root.rstrip('/')}/state-{self._state_stream._key}"
