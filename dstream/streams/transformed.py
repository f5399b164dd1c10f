"""The two primitives most operators are built from.

* :class:`TransformedDStream` — the RDD of interval t is ``fn(t, [parent RDDs of t])``. A
  ``map`` is ``rdd.mapPartitions(...)`` applied this way; PySpark fuses chains of them into
  one pass in one Python worker, so composing costs nothing at run time.
* :class:`UnionDStream` — the union of several streams' RDDs of the same interval.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from dstream.errors import UserFunctionError
from dstream.functions import UserFunction
from dstream.streams.base import DStreamCore
from dstream.time import Time

if TYPE_CHECKING:
    from pyspark import RDD

__all__ = ["TransformedDStream", "UnionDStream"]


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
        super().__init__(parents[0]._graph, parents, name=name, user_functions=user_functions)
        for parent in parents[1:]:
            if parent._slide_duration != parents[0]._slide_duration:
                raise ValueError(
                    f"{name}() combines streams that slide every {parents[0]._slide_duration} "
                    f"and every {parent._slide_duration}; window them to the same slide first"
                )
        self._fn = fn
        # A user function called here, on the driver (transform, transformWith): its errors
        # are reported with this operator's name.
        self._driver_function = driver_function

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
            raise UserFunctionError(f"{self._label} raised {type(exc).__name__}: {exc}") from exc
        from pyspark import RDD

        if result is not None and not isinstance(result, RDD):
            raise TypeError(
                f"the function given to {self._label} returned {type(result).__name__}, "
                "not an RDD; return the transformed RDD (e.g. rdd.map(...))"
            )
        return result


class UnionDStream(DStreamCore[Any]):
    def __init__(self, parents: Sequence[DStreamCore[Any]], *, name: str = "union") -> None:
        if not parents:
            raise ValueError("union() needs at least one stream; pass the streams to combine")
        super().__init__(parents[0]._graph, parents, name=name)
        slides = {p._slide_duration for p in parents}
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
