"""The output stream: one per output operation. Every interval, the scheduler asks each
output stream for a job (``generate_job``) and runs it in that interval's Spark job group."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dstream.dstream import DStream
from dstream.errors import UserFunctionError
from dstream.functions import UserFunction
from dstream.time import Time

if TYPE_CHECKING:
    from pyspark import RDD

__all__ = ["Job", "OutputDStream"]


@dataclass(frozen=True)
class Job:
    """One output operation's work for one interval."""

    time: Time
    output_index: int
    label: str
    run: Callable[[], None]


class OutputDStream(DStream[Any]):
    """Runs ``fn(time, rdd)`` on the driver for every interval of its parent."""

    def __init__(
        self,
        parent: DStream[Any],
        fn: Callable[[Time, RDD[Any]], None],
        *,
        name: str,
        user_functions: tuple[UserFunction, ...] = (),
    ) -> None:
        super().__init__(parent._ssc, [parent], name=name, user_functions=user_functions)
        self._fn = fn
        self.output_index = self._ssc._graph.add_output(self)

    def compute(self, time: Time) -> RDD[Any] | None:
        return self._parents[0].get_or_compute(time)

    def generate_job(self, time: Time) -> Job | None:
        rdd = self.get_or_compute(time)
        if rdd is None:
            return None
        fn, label = self._fn, self.label

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

        return Job(time, self.output_index, label, run)
