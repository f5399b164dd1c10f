"""Tentative, then exact: answers while a lost executor's state is recomputed (PPA's tentative
outputs and partially active replication, its Sec. 3-6, on D-Streams).

When an executor goes, the :class:`TentativeController` (a handler of the scheduler's event
loop: :class:`~dstream.scheduler.events.ExecutorLost`, ``LossRecheck``, and each interval
generated and completed; its Spark jobs run on a worker thread of its own) asks the block
manager master which partitions of each state's newest exact interval are gone. If the
recomputation will take longer than an interval (the lineage since the state's checkpoint
times the recent interval cost, for the share lost), a *recovery episode* starts:

- every interval not completed yet gets a tentative result of each output the loss reaches
  (``StreamingSettings(tentative_outputs=True)`` or ``tentative=True``): computed by a
  :class:`~dstream.streams.tentative_pass.TentativePass` from what survived, its fidelity (PPA's
  Eq. 4) in the RDD handed to the output and in ``onTentativeOutput``; later tentative states
  build on earlier ones, so each costs one interval's work;
- those jobs run in the fair-scheduler pool ``dstream-tentative`` (weight 10), the exact
  recomputation in ``dstream-exact`` (weight 1), so the tentative results keep the stream's
  pace while the exact ones catch up (the SparkContext needs ``spark.scheduler.mode=FAIR``);
- the lost partitions are recomputed in the planner's priority order (the states that carry
  the most priority-weighted fidelity first), and a state whose lost partitions are back
  feeds later tentative results exactly (PPA's incremental recovery);
- the exact results are delivered and committed once each, as ever; the episode ends when
  the exact outputs have caught up.

With ``replica_budget_mb`` the controller also plans, every :data:`PLAN_EVERY` intervals,
which state partitions get a second in-memory copy (:mod:`dstream.scheduler.replicas`): a
partition with a copy is not lost with its executor, for the tentative and the exact path.
"""

from __future__ import annotations

import contextlib
import logging
import statistics
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from dstream.listener import TentativeOutputInfo
from dstream.recovery.compatibility import left_out
from dstream.scheduler.events import ExecutorLost, LossRecheck
from dstream.scheduler.replicas import Candidate, plan
from dstream.scheduler.tentative_results import TentativeResults, ancestors, run_in_pool
from dstream.streams.copartitioned import SectionMarks
from dstream.streams.keyed_state import StateDStream
from dstream.streams.tentative_pass import StateChain
from dstream.streams.windowed import ReducedWindowedDStream
from dstream.time import Time

if TYPE_CHECKING:
    from dstream.scheduler.scheduler import JobScheduler
    from dstream.services import Services
    from dstream.streams.base import DStreamCore
    from dstream.streams.graph import DStreamGraph
    from dstream.streams.output import OutputDStream
    from dstream.streams.state_base import StateStream

__all__ = [
    "EXACT_POOL",
    "PLAN_EVERY",
    "TENTATIVE_POOL",
    "NewestSlot",
    "ReplicaBudget",
    "TentativeController",
]

log = logging.getLogger(__name__)

TENTATIVE_POOL, EXACT_POOL = "dstream-tentative", "dstream-exact"
PLAN_EVERY = 5  # intervals between two replica plans
# How long after an executor's loss the block manager master may still list its blocks.
_SETTLE_S, _SETTLE_TRIES = 0.2, 15


class NewestSlot:
    """The one interval waiting for a tentative pass: a newer one takes its place, an older
    one does not. Tentative passes are newest first: a pass takes about an interval's work
    on the executors that are left (seconds on two cores), so passes queued one per
    interval fell further behind with each interval (bench/engine/tentative_delay.py: the
    waits before a pass grew 4.5, 8.0, 14.6, 17.2, 20.1 s), while a newer interval's
    tentative result is worth more than an older one's, whose exact result comes sooner
    anyway. One pass serves whichever interval is newest when the worker gets to it,
    building on the chain's newest tentative state with the input of every interval since
    (StateStream._tentative)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._time: Time | None = None

    def put(self, time: Time) -> bool:
        """Wait in the slot unless a newer interval does; True if the slot was empty (the
        caller then schedules a take)."""
        with self._lock:
            waiting = self._time
            if waiting is None or time > waiting:
                self._time = time
        return waiting is None

    def take(self) -> Time | None:
        """The interval waiting (None if none), the slot empty after."""
        with self._lock:
            time, self._time = self._time, None
        return time


class TentativeController:
    """Recovery episodes, as a handler of the scheduler's loop: the ``on_*`` methods run on
    the loop and only decide (they look at the block manager master, never sleep and run no
    job); the tentative passes, their deliveries and the replica plans run in order on the
    controller's worker thread, the recomputation of what was lost on a thread of its own."""

    def __init__(
        self,
        graph: DStreamGraph,
        services: Services,
        *,
        capacity: Callable[[], tuple[int, int]] = lambda: (1, 1),
    ) -> None:
        self._graph = graph
        # (executors alive, the most there have been): a loss leaves fewer to recompute on.
        self._capacity = capacity
        self._sc = services.sc
        self._prefix = services.job_group_prefix
        self._settings = graph.settings
        self._scheduler: JobScheduler | None = None
        self._worker: ThreadPoolExecutor | None = None
        self._fair = False
        # The episode: per state its chain, the streams the loss reaches, pins to release.
        self._chains: dict[int, StateChain] = {}
        self._affected: set[int] = set()
        self._pins: list[tuple[DStreamCore[Any], Time]] = []
        self._emitted: set[int] = set()
        # The episode's section marks: its tentative merges' own (TentativePass.marks).
        self._marks: SectionMarks | None = None
        # What an episode begun with no interval pending recomputes after the first
        # tentative results of the next one (the first results go first, as ever).
        self._recovery_waits: dict[int, tuple[Time, frozenset[int]]] | None = None
        self._completed: set[int] = set()
        self._recovering = threading.Event()
        self._next_emit = NewestSlot()  # the interval a pass waits for
        self._results = TentativeResults(graph, services)
        self._replicas = ReplicaBudget(graph, self._states, self._tentative_outputs)
        self.episodes = 0

    # ---- lifecycle and hooks (any thread) -----------------------------------------------------
    @property
    def delivered(self) -> list[TentativeOutputInfo]:
        """The newest 1000 tentative results delivered (tests, the shell)."""
        return self._results.delivered

    @property
    def recovering(self) -> bool:
        """A recovery episode is on: the exact jobs run in the low-weight pool."""
        return self._recovering.is_set()

    def exact_pool(self) -> str | None:
        return EXACT_POOL if self._fair and self.recovering else None

    def start(self, scheduler: JobScheduler) -> None:
        from dstream.streams.surviving import ensure_pool

        self._scheduler = scheduler
        if any(o.gives_tentative for o in self._graph.outputs):
            self._graph.tentative.active = True
            self._fair = ensure_pool(self._sc, TENTATIVE_POOL, 10, 1)
            ensure_pool(self._sc, EXACT_POOL, 1, 0)
            if not self._fair:
                log.warning(
                    "tentative outputs: the SparkContext schedules its jobs FIFO, so a "
                    "tentative result waits behind the recomputation it stands in for; start "
                    "it with spark.scheduler.mode=FAIR"
                )
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="dstream-tentative")

    def stop(self) -> None:
        """After the scheduler's loop stopped: the worker finishes what it runs (what waits
        is dropped), then the episode's pins and cached states are released."""
        if self._worker is not None:
            self._worker.shutdown(wait=True, cancel_futures=True)
        if self._marks is not None:
            self._marks.release()
        pins, chains = self._take_episode()
        self._release(pins, chains)

    def executor_lost(self, executor_id: str) -> None:
        """Any thread (the executor monitor's): posted to the scheduler's loop."""
        if self._scheduler is not None:
            self._scheduler.post(ExecutorLost(executor_id))

    # ---- the loop's handlers: they decide, the worker runs the jobs ---------------------------
    def on_lost(self, executor: str, look: int) -> None:
        self._guarded(self._on_lost, executor, look)

    def on_recheck(
        self, executor: str, found: Mapping[int, tuple[Time, frozenset[int]]], done: Time | None
    ) -> None:
        self._guarded(self._on_late, executor, dict(found), done)

    def on_generated(self, time: Time) -> None:
        if self._chains and self._guarded(self._want, time):
            waits, self._recovery_waits = self._recovery_waits, None
            if waits is None:
                self._emit_newest_later(time)
            else:
                self._submit(self._first_results, [time], waits)

    def _emit_newest_later(self, time: Time) -> None:
        """``time``'s tentative results, or a newer interval's (:class:`NewestSlot`)."""
        if self._next_emit.put(time):
            self._submit(self._emit_slot)

    def _emit_slot(self) -> None:
        """On the worker: the newest interval waiting in the slot, if any."""
        time = self._next_emit.take()
        if time is not None:
            self._emit(time)

    def on_completed(self, time: Time) -> None:
        self._guarded(self._on_completed, time)

    def _guarded(self, handler: Callable[..., Any], *args: Any) -> Any:
        """A failure of a handler is logged: tentative results are best effort, the loop and
        the exact results go on."""
        try:
            return handler(*args)
        except Exception:
            log.exception("tentative outputs: %s%s failed", handler.__name__, args)
            return None

    def _submit(self, work: Callable[..., None], *args: Any) -> None:
        """Run ``work`` on the worker thread, after what was submitted before."""
        if self._worker is None:
            return
        with contextlib.suppress(RuntimeError):  # stopped: nothing runs any more
            self._worker.submit(self._guarded, work, *args)

    # ---- which states and outputs -------------------------------------------------------------
    def _tentative_outputs(self) -> list[OutputDStream]:
        return [o for o in self._graph.outputs if o.gives_tentative]

    def _capable(self, state: StateStream) -> bool:
        """States a tentative pass can compute (lineage-recovered keyed states and windows)."""
        if isinstance(state, StateDStream):  # unless the table leaves its mode out
            return left_out(state.recovery_modes, "tentative outputs") is None
        return isinstance(state, ReducedWindowedDStream)

    def _states(self) -> list[StateStream]:
        from dstream.streams.state_base import StateStream

        return [s for s in self._graph.streams if isinstance(s, StateStream) and self._capable(s)]

    # ---- a loss -------------------------------------------------------------------------------
    def _on_lost(self, executor: str, look: int = 0) -> None:
        outputs = self._tentative_outputs()
        if not outputs:
            return
        found: dict[int, tuple[Time, frozenset[int]]] = {}
        for state in self._states():
            held = lost_partitions(state)
            if held is not None and held[1]:
                found[state.id] = held
        if not found:
            # The master forgets the executor's blocks soon after: look again, later.
            if look + 1 < _SETTLE_TRIES and self._scheduler is not None:
                again = ExecutorLost(executor, look + 1)
                timer = threading.Timer(_SETTLE_S, self._scheduler.post, [again])
                timer.daemon = True
                timer.start()
                return
            log.info("tentative outputs: executor %s held no state that is lost", executor)
            return
        if self._chains:  # a loss during an episode: what the chains started from lost more
            for sid, (_t, more) in found.items():
                chain = self._chains.get(sid)
                if chain is not None and more - chain.lost:
                    chain.lost = chain.lost | more
                    chain.missing.update({p: [] for p in more})
                    chain.recovered = False
            return
        estimate = self._estimate(found)
        batch = self._graph.batch_duration.total_seconds()
        if estimate < batch:
            # Likely quick; if the interval after the lost state is not done one interval
            # from now, it was not (a replacement executor to start, stages to resubmit).
            assert self._scheduler is not None
            done = self._scheduler.completed_upto
            log.info(
                "tentative outputs: executor %s lost state, recomputed in ~%.2f s (under an "
                "interval): tentative results only if it is not done in %.1f s",
                executor,
                estimate,
                batch,
            )
            recheck = LossRecheck(executor, found, done)
            timer = threading.Timer(batch, self._scheduler.post, [recheck])
            timer.daemon = True
            timer.start()
            return
        self._begin(found, outputs, executor, estimate)

    def _on_late(self, executor: str, found: dict[int, Any], done: Time | None) -> None:
        """One interval after a loss judged quick: begin if nothing completed since and the
        lost partitions are still lost."""
        from dstream.streams.surviving import copies

        assert self._scheduler is not None
        if self._chains or self._scheduler.completed_upto != done:
            return
        by_id = {s.id: s for s in self._states()}
        still: dict[int, tuple[Time, frozenset[int]]] = {}
        for sid, (exact_time, lost) in found.items():
            rdd = by_id[sid].state_rdd(exact_time)
            if rdd is not None:
                held = copies(rdd)
                gone = frozenset(p for p in lost if held[p] == 0)
                if gone:
                    still[sid] = (exact_time, gone)
        outputs = self._tentative_outputs()
        if still and outputs:
            self._begin(still, outputs, executor, self._graph.batch_duration.total_seconds())

    def _estimate(self, found: dict[int, tuple[Time, frozenset[int]]]) -> float:
        assert self._scheduler is not None
        return recompute_seconds(
            self._states(), found, self._scheduler.recent_work_ms(), *self._capacity()
        )

    def _begin(
        self,
        found: dict[int, tuple[Time, frozenset[int]]],
        outputs: list[OutputDStream],
        executor: str,
        estimate: float,
    ) -> None:
        by_id = {s.id: s for s in self._graph.streams}
        affected = downstream(self._graph, set(found))
        chains: dict[int, StateChain] = {}
        with self._graph.lock:
            for state in self._states():
                if state.id not in affected:
                    continue
                exact_time, lost = found.get(state.id) or (state.latest_time(), frozenset())
                chains[state.id] = StateChain(
                    exact_time, lost, state.published_ms, {p: [] for p in lost}
                )
                state.pin(exact_time)  # the episode reads its blocks: not forgotten
                self._pins.append((state, exact_time))
            # A stream downstream of a loss that a tentative pass cannot compute (track(),
            # an approximately recovered state): the outputs behind it wait for the exact.
            blocked = {
                s.id
                for s in self._graph.streams
                if s.id in affected and s.is_state and s.id not in chains
            }
            self._affected = affected - downstream(self._graph, blocked)
        self._chains = chains
        self._marks = SectionMarks(self._sc)
        self._emitted, self._completed = set(), set()
        self._recovering.set()
        self.episodes += 1
        lost_text = ", ".join(f"{by_id[s].label}: {sorted(lo)}" for s, (_t, lo) in found.items())
        log.warning(
            "tentative outputs: executor %s lost state partitions (%s), ~%.1f s to recompute: "
            "tentative results until the exact ones catch up",
            executor,
            lost_text,
            estimate,
        )
        assert self._scheduler is not None
        wanted = [t for t in self._scheduler.pending() if self._want(t)]
        if wanted:
            self._submit(self._first_results, wanted, dict(found))
        else:  # the next interval's first tentative results go first
            self._recovery_waits = dict(found)

    def _first_results(
        self, times: list[Time], found: dict[int, tuple[Time, frozenset[int]]]
    ) -> None:
        """On the worker. The first tentative results go first: the recovery's long tasks
        would otherwise hold the executors that are left (a fair scheduler picks by pool
        only as a task ends). Then the lost partitions are recomputed, while later intervals
        get theirs."""
        recovery = threading.Thread(
            target=self._recover, args=(found,), name="dstream-recovery", daemon=True
        )
        self._emit(times[0])
        recovery.start()
        if len(times) > 1:  # newest first, unless a newer one came meanwhile
            self._emit_newest_later(times[-1])

    def _recover(self, found: dict[int, tuple[Time, frozenset[int]]]) -> None:
        """Recompute the lost partitions, the states carrying the most weighted fidelity
        first; a state that is back feeds later tentative results exactly."""
        by_id = {s.id: s for s in self._states()}
        weights = self._replicas.weights()
        order = sorted(found, key=lambda sid: -weights.get(sid, 0.0))
        run_in_pool(self._sc, EXACT_POOL if self._fair else None)
        for sid in order:
            exact_time, lost = found[sid]
            state = by_id[sid]
            rdd = state.state_rdd(exact_time)
            chain = self._chains.get(sid)
            if rdd is None or chain is None:
                continue
            self._sc.setJobGroup(
                f"{self._prefix}-recovery-{exact_time.ms}",
                f"dstream recovery of {state.label} at {exact_time}",
            )
            try:
                self._sc.runJob(rdd, lambda records: [], sorted(lost))
            except Exception as exc:  # the exact pipeline recomputes it anyway
                log.info("tentative outputs: recovering %s failed: %s", state.label, exc)
                continue
            chain.recovered = True
            log.info("tentative outputs: %s recovered its lost partitions", state.label)

    # ---- one interval's tentative results -----------------------------------------------------
    def _want(self, time: Time) -> bool:
        """On the loop: whether ``time`` gets tentative results (then it is counted as
        emitted, and the worker computes them)."""
        if time.ms in self._emitted or time.ms in self._completed:
            return False
        if all(c.recovered or not c.lost for c in self._chains.values()):
            # Every lost partition is back: the exact results follow without a recomputation.
            self._end_episode()
            log.info("tentative outputs: every lost partition is back at %s", time)
            return False
        assert self._scheduler is not None
        if time not in self._scheduler.pending():
            return False
        self._emitted.add(time.ms)
        return True

    def _emit(self, time: Time) -> None:
        """On the worker: ``time``'s tentative results, in the episode as it is now (none if
        it ended, or if the exact results of ``time`` all came first)."""
        chains, affected = self._chains, self._affected
        assert self._scheduler is not None
        if not chains or time not in self._scheduler.pending():
            return
        # An output whose exact result of ``time`` came first gives no tentative one (its
        # gate drops one that gets there later; this only saves computing it).
        outputs = [
            o
            for o in self._tentative_outputs()
            if o.id in affected and not o.tentative_closed(time)
        ]
        pool = TENTATIVE_POOL if self._fair else None
        self._results.emit(time, outputs, affected, chains, pool, self._marks)

    # ---- the exact pipeline -------------------------------------------------------------------
    def _on_completed(self, time: Time) -> None:
        if self._replicas.due():
            self._submit(self._replicas.plan)
        if not self._chains:
            return
        self._completed.add(time.ms)
        assert self._scheduler is not None
        pending = self._scheduler.pending()
        # Caught up: everything that got a tentative result is exact, and at most one
        # interval is waiting; or every lost partition is back (what a tentative result
        # would give now is the exact one, which follows without a recomputation).
        caught_up = all(ms in self._completed for ms in self._emitted) and len(pending) <= 1
        if caught_up or all(c.recovered or not c.lost for c in self._chains.values()):
            self._end_episode()
            log.info("tentative outputs: the exact results caught up at %s", time)

    def _end_episode(self) -> None:
        """On the loop: the episode is over; its pins and cached tentative states are
        released on the worker, after the tentative results it may still be computing."""
        pins, chains = self._take_episode()
        if pins or chains:
            self._submit(self._release, pins, chains)

    def _take_episode(self) -> tuple[list[tuple[DStreamCore[Any], Time]], dict[int, StateChain]]:
        pins, chains = self._pins, self._chains
        with self._graph.lock:
            self._pins, self._chains, self._affected = [], {}, set()
        if self._marks is not None:  # released on the worker, after the passes reading it
            self._submit(self._marks.release)
            self._marks = None
        self._recovery_waits = None
        self._next_emit.take()  # an interval waiting for a pass of this episode: none
        self._recovering.clear()
        return pins, chains

    def _release(
        self, pins: list[tuple[DStreamCore[Any], Time]], chains: dict[int, StateChain]
    ) -> None:
        with self._graph.lock:
            for stream, t in pins:
                stream.unpin(t)
            for chain in chains.values():
                if chain.newest is not None:
                    chain.newest[1].unpersist(blocking=False)


class ReplicaBudget:
    """The replica budget (``replica_budget_mb``): every :data:`PLAN_EVERY` intervals, which
    state partitions get a second in-memory copy (:mod:`dstream.scheduler.replicas` plans
    it), weighted by the priorities of the tentative outputs each state reaches."""

    def __init__(
        self,
        graph: DStreamGraph,
        states: Callable[[], list[StateStream]],
        outputs: Callable[[], list[OutputDStream]],
    ) -> None:
        self._graph = graph
        self._settings = graph.settings
        self._states = states
        self._outputs = outputs
        self._since_plan = 0

    def due(self) -> bool:
        """One more interval completed: whether a plan is due."""
        self._since_plan += 1
        if self._since_plan >= PLAN_EVERY and self._settings.replica_budget_mb > 0:
            self._since_plan = 0
            return True
        return False

    def weights(self) -> dict[int, float]:
        """Each state's weight: the priorities of the tentative outputs it reaches."""
        weights: dict[int, float] = {}
        for out in self._outputs():
            priority = out.priority if self._settings.replica_priorities else 1
            for stream in ancestors(out):
                if stream.is_state:
                    weights[stream.id] = weights.get(stream.id, 0.0) + priority
        return weights

    def plan(self) -> None:
        from dstream.streams.surviving import sizes

        weights = self.weights()
        candidates: list[Candidate] = []
        for state in self._states():
            if state.id not in weights:
                continue
            try:
                newest = state.latest_time()
            except Exception:
                continue
            rdd = state.state_rdd(newest)
            if rdd is None:
                continue
            size = sizes(rdd)
            rates = [state.ledger.rate(newest.ms, p) for p in range(len(size))]
            total = sum(rates) or 1.0
            candidates += [
                Candidate(state.id, p, size[p], weights[state.id] * rates[p] / total)
                for p in range(len(size))
            ]
        chosen = plan(candidates, int(self._settings.replica_budget_mb * 1024 * 1024))
        for state in self._states():
            state.replicate_partitions(chosen.get(state.id, ()))
        log.info(
            "replica budget: %s",
            {s.label: sorted(s.replicated) for s in self._states() if s.replicated},
        )


def recompute_seconds(
    states: list[StateStream],
    found: dict[int, tuple[Time, frozenset[int]]],
    recent_ms: list[int],
    alive: int,
    most: int,
) -> float:
    """Seconds to recompute what was lost: each lost state's lineage since its checkpoint,
    at the recent cost of an interval (``recent_ms``) on the ``alive`` executors that are
    left of the ``most`` there have been, for the share of partitions lost."""
    per_interval = (statistics.median(recent_ms) / 1000) if recent_ms else 1.0
    per_interval *= max(1, most) / max(1, alive)
    by_id = {s.id: s for s in states}
    worst = 0.0
    for sid, (exact_time, lost) in found.items():
        state = by_id[sid]
        since = state.published_ms
        if since is None:
            assert state.zero_time is not None
            since = state.zero_time.ms
        depth = (exact_time.ms - since) // state.slide_duration.ms
        share = len(lost) / max(1, state.partitions_at(exact_time))
        worst = max(worst, depth * per_interval * share)
    return worst


def downstream(graph: DStreamGraph, roots: set[int]) -> set[int]:
    """The streams ``roots`` reach, ``roots`` included (by id)."""
    children: dict[int, list[int]] = {}
    for s in graph.streams:
        for p in s.parents:
            children.setdefault(p.id, []).append(s.id)
    seen, todo = set(roots), list(roots)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in seen:
                seen.add(child)
                todo.append(child)
    return seen


def lost_partitions(state: StateStream) -> tuple[Time, frozenset[int]] | None:
    """The newest exact interval of ``state`` and the partitions of it no executor holds
    (None: no interval completed yet, or its state is not remembered)."""
    from dstream.streams.surviving import copies

    try:
        exact_time = state.latest_time()
    except Exception:
        return None  # no interval completed yet
    rdd = state.state_rdd(exact_time)
    if rdd is None:
        return None
    held = copies(rdd)
    return exact_time, frozenset(p for p, n in enumerate(held) if n == 0)
