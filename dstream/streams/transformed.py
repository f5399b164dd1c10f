"""The two primitives most operators are built from.

* :class:`TransformedDStream` — the RDD of interval t is ``fn(t, [parent RDDs of t])``. A
  ``map`` is ``rdd.mapPartitions(...)`` applied this way; PySpark fuses chains of them into
  one pass in one Python worker, so composing costs nothing at run time.
* :class:`UnionDStream` — the union of several streams' RDDs of the same interval.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from dstream.errors import UserFunctionError
from dstream.functions import QUARANTINE_ADVICE, UserFunction
from dstream.streams.base import DStreamCore
from dstream.streams.plan import KeyedReduce, PerRecord, PlanStep
from dstream.time import Time

if TYPE_CHECKING:
    from pyspark import RDD

__all__ = ["RecordsDStream", "TransformedDStream", "UnionDStream"]

# Operators whose output record needs a record of every parent (PPA's correlated-input
# operators), and those that map partition i to partition i.
CORRELATED = frozenset({"join", "leftOuterJoin", "rightOuterJoin", "fullOuterJoin", "cogroup"})
NARROW = frozenset({"mapPartitions", "mapPartitionsWithIndex", "glom"})


class TransformedDStream(DStreamCore[Any]):
    def __init__(
        self,
        parents: Sequence[DStreamCore[Any]],
        fn: Callable[[Time, list[RDD[Any]]], RDD[Any] | None],
        *,
        name: str,
        user_functions: Iterable[UserFunction] = (),
        driver_function: bool = False,
    ) -> None:
        super().__init__(parents[0].graph, parents, name=name, user_functions=user_functions)
        for parent in parents[1:]:
            if parent.slide_duration != parents[0].slide_duration:
                raise ValueError(
                    f"{name}() combines streams that slide every {parents[0].slide_duration} "
                    f"and every {parent.slide_duration}; window them to the same slide first"
                )
        self._fn = fn
        # A user function called here, on the driver (transform, transformWith): its errors
        # are reported with this operator's name.
        self._driver_function = driver_function

    # reduceByKey's (func, numPartitions): a replay may compute it over many intervals in
    # one job (dstream.scheduler.stretch).
    _keyed_reduce: tuple[Callable[[Any, Any], Any], int] | None = None

    # Set by an operator that knows it maps partition i to partition i (a window state's
    # view, a filter after it), which its name alone does not say.
    _narrow = False

    @property
    def keyed_reduce(self) -> tuple[Callable[[Any, Any], Any], int] | None:
        """reduceByKey's (func, numPartitions) if this transform is one (None otherwise)."""
        return self._keyed_reduce

    def plan_step(self) -> PlanStep | None:
        if self._keyed_reduce is None:
            return None
        return KeyedReduce(*self._keyed_reduce)

    def mark_keyed_reduce(self, func: Callable[[Any, Any], Any], num_partitions: int) -> None:
        """Say that this transform is ``reduceByKey(func, num_partitions)``: a replay may
        then compute it over many intervals in one job (dstream.scheduler.stretch)."""
        self._keyed_reduce = (func, num_partitions)

    def mark_narrow(self) -> None:
        """Say that this transform maps partition i to partition i (its name alone does not
        say so): a tentative result's loss stays in the partitions it was in."""
        self._narrow = True

    @property
    def _loss_rule(self) -> str:  # type: ignore[override]
        if self._narrow:
            return "narrow"
        if self._operator in CORRELATED:
            return "correlated"
        return "narrow" if self._operator in NARROW else "mix"

    def _compute(self, time: Time) -> RDD[Any] | None:
        rdds = []
        for parent in self._parents:
            rdd = parent._get_or_compute(time)
            if rdd is None:
                return None
            rdds.append(rdd)
        if not self._driver_function:
            return self._fn(time, rdds)
        try:
            result = self._fn(time, rdds)
        except UserFunctionError:
            raise
        except Exception as exc:
            raise UserFunctionError(f"{self.label} raised {type(exc).__name__}: {exc}") from exc
        from pyspark import RDD

        if result is not None and not isinstance(result, RDD):
            raise TypeError(
                f"the function given to {self.label} returned {type(result).__name__}, "
                "not an RDD; return the transformed RDD (e.g. rdd.map(...))"
            )
        return result


def _plain(kind: str, g: Callable[..., Any]) -> Callable[[Iterable[Any]], Iterable[Any]]:
    """The partition function of a per-record operator whose failures fail the task."""
    if kind == "map":
        return lambda it: map(g, it)
    if kind == "filter":
        return lambda it: filter(g, it)
    if kind == "flatMap":
        return lambda it: itertools.chain.from_iterable(map(g, it))
    if kind == "mapValues":
        return lambda it: ((k, g(v)) for k, v in it)
    return lambda it: ((k, x) for k, v in it for x in g(v))  # flatMapValues


class RecordsDStream(DStreamCore[Any]):
    """A per-record operator (map, flatMap, filter, mapValues, flatMapValues): one
    ``mapPartitions`` over the parent's RDD of each interval. Under
    ``bad_records="quarantine"`` a record ``fn`` raises on is set aside, not passed on
    (:mod:`dstream.tasks.bad_record_notes`)."""

    KINDS = ("map", "flatMap", "filter", "mapValues", "flatMapValues")
    _loss_rule = "narrow"

    def __init__(
        self, parent: DStreamCore[Any], kind: str, uf: UserFunction, preserves: bool
    ) -> None:
        assert kind in self.KINDS, kind
        super().__init__(parent.graph, [parent], name=kind, user_functions=[uf])
        self._kind = kind
        self._uf = uf
        # mapValues and filter keep keys where they are; map and flatMap when told so.
        self._preserves = preserves or kind in ("filter", "mapValues", "flatMapValues")
        # bad_records="fail": the same partition function every interval.
        self._failing = _plain(kind, uf.guarded(QUARANTINE_ADVICE))

    @property
    def partition_function(self) -> Callable[[Iterable[Any]], Iterable[Any]]:
        """What this operator does to one partition's records (under bad_records="fail")."""
        return self._failing

    def plan_step(self) -> PlanStep | None:
        return PerRecord(self._failing)

    def _compute(self, time: Time) -> RDD[Any] | None:
        rdd = self._parents[0]._get_or_compute(time)
        if rdd is None:
            return None
        quarantine = self._graph.quarantine
        if not quarantine.active:
            return rdd.mapPartitions(self._failing, self._preserves)
        from dstream.tasks.bad_record_notes import quarantining

        acc = quarantine.accumulator()
        task = quarantining(self._kind, self._uf.fn, self._uf.label, time.ms, acc, self._id)
        return rdd.mapPartitionsWithIndex(task, self._preserves)


class UnionDStream(DStreamCore[Any]):
    _loss_rule = "union"

    def __init__(self, parents: Sequence[DStreamCore[Any]], *, name: str = "union") -> None:
        if not parents:
            raise ValueError("union() needs at least one stream; pass the streams to combine")
        super().__init__(parents[0].graph, parents, name=name)
        slides = {p.slide_duration for p in parents}
        if len(slides) > 1:
            raise ValueError(
                f"union() combines streams with different slide durations "
                f"{sorted(s.ms for s in slides)} ms; window them to the same slide first"
            )

    def _compute(self, time: Time) -> RDD[Any] | None:
        rdds = [r for r in (p._get_or_compute(time) for p in self._parents) if r is not None]
        if not rdds:
            return None
        if len(rdds) == 1:
            return rdds[0]
        return self._graph.sc.union(rdds)
