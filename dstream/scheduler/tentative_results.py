"""One interval's tentative results, computed and delivered: the work of a recovery
episode (:mod:`dstream.scheduler.recovery_episodes`) that runs Spark jobs, on the episode
controller's worker thread, never on the scheduler's loop.

A :class:`~dstream.streams.tentative_pass.TentativePass` builds each affected output's RDD
from what survived; the tentative states it reads are computed first (their tasks find
blocks lost after the loss was looked up); each result's fidelity then follows from the
partitions its states lacked, and the output's delivery gate drops a result whose exact one
came first.
"""

from __future__ import annotations

import logging
import time as _time
from typing import TYPE_CHECKING, Any

from dstream.listener import TentativeOutputInfo
from dstream.scheduler.coordinator import given_names
from dstream.streams.fidelity import output_fidelity
from dstream.streams.tentative_pass import StateChain, TentativePass
from dstream.time import Time

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext

    from dstream.services import Services
    from dstream.streams.base import DStreamCore
    from dstream.streams.copartitioned import SectionMarks
    from dstream.streams.graph import DStreamGraph
    from dstream.streams.output import OutputDStream

__all__ = ["TentativeResults", "ancestors", "run_in_pool"]

log = logging.getLogger(__name__)


class TentativeResults:
    """Computes and delivers tentative results; keeps the newest 1000 delivered (tests,
    the shell)."""

    def __init__(self, graph: DStreamGraph, services: Services) -> None:
        self._graph = graph
        self._sc = services.sc
        self._clock = services.clock
        self._bus = services.bus
        self._prefix = services.job_group_prefix
        self.delivered: list[TentativeOutputInfo] = []

    def emit(
        self,
        time: Time,
        outputs: list[OutputDStream],
        affected: set[int],
        chains: dict[int, StateChain],
        pool: str | None,
        marks: SectionMarks | None = None,
    ) -> None:
        """``time``'s tentative results of ``outputs`` (those the loss reaches, whose exact
        result did not come first), from the episode's ``chains``; their jobs run in the
        fair-scheduler pool ``pool``, their state merges read the episode's ``marks``."""
        began = _time.monotonic()
        built: list[tuple[OutputDStream, RDD[Any]]] = []
        with self._graph.lock:
            locked = _time.monotonic()
            tentative = TentativePass(self._graph, time, affected, chains, marks)
            with tentative:
                for out in outputs:
                    try:
                        rdd = tentative.rdd(out, time)
                    except Exception as exc:
                        log.warning("tentative result of %s at %s: %s", out.label, time, exc)
                        continue
                    if rdd is not None:
                        built.append((out, rdd))
        run_in_pool(self._sc, pool)
        self._sc.setJobGroup(f"{self._prefix}-tentative-{time.ms}", f"dstream tentative {time}")
        built_at = _time.monotonic()
        self._read_back(tentative, time, chains)
        read_at = _time.monotonic()
        # Each result's fidelity from the partitions its states lacked (known only now).
        prepared: list[tuple[OutputDStream, RDD[Any], float, dict[str, list[int]]]] = []
        with self._graph.lock, tentative:
            for out, rdd in built:
                try:
                    fidelity = output_fidelity(tentative.loss(out, time))
                except Exception as exc:
                    log.warning("tentative result of %s at %s: %s", out.label, time, exc)
                    continue
                prepared.append((out, rdd, fidelity, self._lost_of(out, chains)))
        for out, rdd, fidelity, lost in prepared:
            view = _marked(rdd, time, fidelity)
            try:
                if not out.deliver_tentative(time, view):
                    log.info(
                        "tentative result of %s at %s dropped: its exact result came first",
                        out.label,
                        time,
                    )
                    continue
            except Exception as exc:
                log.warning("tentative result of %s at %s failed: %s", out.label, time, exc)
                continue
            now = self._clock.now().ms
            info = TentativeOutputInfo(
                time,
                out.output_index,
                out.label,
                fidelity,
                lost,
                int(_time.time() * 1000),
                now - time.ms,
                out.priority,
            )
            self.delivered = [*self.delivered[-999:], info]
            self._bus.post("onTentativeOutput", info)
        for older in tentative.superseded:  # read by this interval's results, not again
            older.unpersist(blocking=False)
        # Where a pass's time goes (bench/engine/tentative_delay.py reads the timeline).
        log.info(
            "tentative pass of %s: graph lock %.2f s, built %.2f s, states read back %.2f s, "
            "outputs %.2f s",
            time,
            locked - began,
            built_at - locked,
            read_at - built_at,
            _time.monotonic() - read_at,
        )

    def _read_back(
        self, tentative: TentativePass, time: Time, chains: dict[int, StateChain]
    ) -> None:
        """Compute the tentative states ``tentative`` read from the blocks that survived
        (cached: the outputs' jobs then read them) and take the partitions their tasks
        found lost into the chains. The controller looked the lost blocks up when the first
        executor's loss was reported; a second executor killed at the same time may be
        reported later (after this interval's tentative result, the first one), while its
        blocks are already gone when the tasks read them."""
        notes = self._graph.tentative
        by_id = {s.id: s for s in self._graph.streams}
        changed = False
        for sid, rdd in tentative.read_back:
            try:
                rdd._jrdd.count()  # the JVM side, cached: no record shipped to Python
            except Exception as exc:
                log.info("tentative outputs: computing a tentative state failed: %s", exc)
                continue
            found = notes.lost_blocks(sid, time)
            chain = chains.get(sid)
            if chain is None or not found - chain.lost:
                continue
            more = found - chain.lost
            log.info(
                "tentative outputs: %s also lost partitions %s (found by the tasks at %s)",
                by_id[sid].label,
                sorted(more),
                time,
            )
            chain.lost = chain.lost | more
            chain.missing.update({p: [] for p in more})
            chain.recovered = False
            changed = True
        if changed:
            tentative.reassess()

    def _lost_of(self, out: OutputDStream, chains: dict[int, StateChain]) -> dict[str, list[int]]:
        by_id = {s.id: s for s in self._graph.streams}
        named = given_names(self._graph.streams)
        upstream = {p.id for p in ancestors(out)}
        return {
            named.get(sid) or by_id[sid].label: sorted(c.lost)
            for sid, c in chains.items()
            if sid in upstream and c.lost and not c.recovered
        }


def run_in_pool(sc: SparkContext, name: str | None) -> None:
    """Run this thread's next jobs in the fair-scheduler pool ``name`` (None: the default)."""
    sc.setLocalProperty("spark.scheduler.pool", name)  # type: ignore[arg-type]


def ancestors(stream: DStreamCore[Any]) -> list[DStreamCore[Any]]:
    seen: dict[int, DStreamCore[Any]] = {}
    todo = [stream]
    while todo:
        s = todo.pop()
        for p in s.parents:
            if p.id not in seen:
                seen[p.id] = p
                todo.append(p)
    return list(seen.values())


def _marked(rdd: RDD[Any], time: Time, fidelity: float) -> RDD[Any]:
    """A new RDD object over ``rdd``'s data, marked as a tentative result."""
    from pyspark import RDD

    view: RDD[Any] = RDD(rdd._jrdd, rdd.ctx, rdd._jrdd_deserializer)
    view.partitioner = rdd.partitioner
    view.tentative = True  # type: ignore[attr-defined]
    view.fidelity = fidelity  # type: ignore[attr-defined]
    view.interval = time  # type: ignore[attr-defined]
    return view
