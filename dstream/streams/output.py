"""The output stream: one per output operation. Every interval, the scheduler asks each
output stream for a job (``generate_job``) and runs it in that interval's Spark job group."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dstream.errors import UserFunctionError
from dstream.functions import UserFunction
from dstream.streams.base import DStreamCore
from dstream.time import Time

if TYPE_CHECKING:
    from pyspark import RDD

__all__ = ["Job", "OutputDStream"]


@dataclass(frozen=True)
class Job:
    """One output operation's work for one interval.

    With timestep pipelining the scheduler calls ``prepare`` (compute the interval's RDD into
    memory: no side effect, so it may run while earlier jobs still run), then ``run`` (the
    output's side effect) once every job before it has run, and ``release`` once the interval
    is complete. Without pipelining only ``run`` is called.
    """

    time: Time
    output_index: int
    label: str
    run: Callable[[], None]
    prepare: Callable[[], None] | None = None
    release: Callable[[], None] | None = None
    # The first job of an interval: what streams do before the interval's jobs run.
    before: Callable[[], None] | None = None


class OutputDStream(DStreamCore[Any]):
    """Runs ``fn(time, rdd)`` on the driver for every interval of its parent."""

    def __init__(
        self,
        parent: DStreamCore[Any],
        fn: Callable[[Time, RDD[Any]], None],
        *,
        name: str,
        user_functions: tuple[UserFunction, ...] = (),
    ) -> None:
        super().__init__(parent._graph, [parent], name=name, user_functions=user_functions)
        self._fn = fn
        self._output_index = self._graph.add_output(self)

    def _compute(self, time: Time) -> RDD[Any] | None:
        return self._parents[0]._get_or_compute(time)

    def _generate_job(self, time: Time) -> Job | None:
        rdd = self._get_or_compute(time)
        if rdd is None:
            return None
        fn, label = self._fn, self._label

        def run() -> None:
            try:
                fn(time, rdd)
            except UserFunctionError:
                raise
            except Exception as exc:
                # A Py4JJavaError here carries the task's Python traceback; the scheduler
                # extracts it. Driver-side failures are named after this output operation.
                if type(exc).__name__ == "Py4JJavaError":
                    raise
                raise UserFunctionError(f"{label} raised {type(exc).__name__}: {exc}") from exc

        cached_here = []

        def prepare() -> None:
            # The JVM side of the interval's RDD, counted: its partitions are computed and
            # cached without shipping a single record to another Python worker.
            from pyspark import StorageLevel

            if not rdd.is_cached:
                rdd.persist(StorageLevel.MEMORY_ONLY)
                cached_here.append(rdd)
            rdd._jrdd.count()

        def release() -> None:
            for cached in cached_here:
                cached.unpersist(blocking=False)
            cached_here.clear()

        return Job(time, self._output_index, label, run, prepare, release)
