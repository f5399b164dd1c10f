"""The output stream: one per output operation. Every interval, the scheduler asks each
output stream for a job (``generate_job``) and runs it in that interval's Spark job group."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dstream.errors import UserFunctionError, raised_by_a_task
from dstream.functions import UserFunction
from dstream.jvm import share_kryo
from dstream.streams.base import DStreamCore
from dstream.time import Time

if TYPE_CHECKING:
    from pyspark import RDD

__all__ = ["DeliveryGate", "Job", "OutputDStream"]


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


class DeliveryGate:
    """The order in which one output hands over an interval's results: its tentative results
    (while a lost state is recomputed) only before its exact one, never after it and never
    during it. The exact delivery closes the interval to tentative ones first, then waits
    for a tentative delivery already under way to end (so a ``saveAsTextFiles`` exact commit
    deletes a tentative directory that is whole, not one being written); a tentative one
    that comes later is dropped. The decision is made under one lock, whichever thread
    (the output's job, the tentative controller's) comes first.

    Exact deliveries come in interval order (the scheduler's ordering gate), so closing
    every interval up to the newest exact one is closing each.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._exact_upto: int | None = None  # the newest interval whose exact result began
        self._busy: set[int] = set()  # intervals whose tentative delivery is under way

    def _closed(self, time_ms: int) -> bool:  # (under the lock)
        return self._exact_upto is not None and time_ms <= self._exact_upto

    def closed(self, time_ms: int) -> bool:
        """The exact result of ``time_ms`` was (or is being) delivered: no tentative one."""
        with self._cond:
            return self._closed(time_ms)

    def tentative(self, time_ms: int, deliver: Callable[[], None]) -> bool:
        """Run ``deliver`` unless the exact result of ``time_ms`` came first; False: dropped."""
        with self._cond:
            if self._closed(time_ms):
                return False
            self._busy.add(time_ms)
        try:
            deliver()
        finally:
            with self._cond:
                self._busy.discard(time_ms)
                self._cond.notify_all()
        return True

    def exact(self, time_ms: int, deliver: Callable[[], None]) -> None:
        """Close ``time_ms`` to tentative results, wait for one under way, then ``deliver``."""
        with self._cond:
            if self._exact_upto is None or time_ms > self._exact_upto:
                self._exact_upto = time_ms
            while time_ms in self._busy:
                self._cond.wait()
        deliver()


class OutputDStream(DStreamCore[Any]):
    """Runs ``fn(time, rdd)`` on the driver for every interval of its parent."""

    _loss_rule = "narrow"

    def __init__(
        self,
        parent: DStreamCore[Any],
        fn: Callable[[Time, RDD[Any]], None],
        *,
        name: str,
        user_functions: tuple[UserFunction, ...] = (),
        tentative: bool | None = None,
        tentative_fn: Callable[[Time, RDD[Any]], None] | None = None,
        priority: int = 1,
        text_target: tuple[str, str | None] | None = None,
    ) -> None:
        super().__init__(parent.graph, [parent], name=name, user_functions=user_functions)
        self._fn = fn
        # Tentative results while a loss is recovered (dstream.scheduler.recovery_episodes): None
        # follows StreamingSettings.tentative_outputs. tentative_fn delivers one (None: this
        # output gives none); priority weighs it in the replica budget's plan (PPA's).
        self._tentative_wanted = tentative
        self._tentative_fn = tentative_fn
        self._priority = priority
        if text_target is not None:
            self._text_target = text_target
        self._gate = DeliveryGate()
        self._output_index = self._graph.add_output(self)

    @property
    def output_index(self) -> int:
        """This output's place among the program's outputs (the order their jobs run in)."""
        return self._output_index

    @property
    def priority(self) -> int:
        """How much this output's fidelity counts when the replica budget is spent."""
        return self._priority

    @property
    def text_target(self) -> tuple[str, str | None] | None:
        """saveAsTextFiles' (prefix, suffix); None for other outputs."""
        return self._text_target

    @property
    def gives_tentative(self) -> bool:
        """Whether this output delivers tentative results while a loss is recovered."""
        if self._tentative_fn is None:
            return False
        wanted = self._tentative_wanted
        return self._graph.settings.tentative_outputs if wanted is None else wanted

    def _compute(self, time: Time) -> RDD[Any] | None:
        return self._parents[0]._get_or_compute(time)

    def deliver_tentative(self, time: Time, rdd: RDD[Any]) -> bool:
        """Hand ``rdd``, a tentative result of ``time``, to this output, unless its exact
        result of ``time`` was delivered first (then it is dropped: False)."""
        fn = self._tentative_fn
        if fn is None:
            return False
        return self._gate.tentative(time.ms, lambda: fn(time, rdd))

    def tentative_closed(self, time: Time) -> bool:
        """Whether the exact result of ``time`` was delivered (a tentative one would be
        dropped: no need to compute it)."""
        return self._gate.closed(time.ms)

    # saveAsTextFiles' (prefix, suffix): a replay may compute this output's intervals in
    # stretches (dstream.scheduler.stretch).
    _text_target: tuple[str, str | None] | None = None

    def _generate_job(self, time: Time) -> Job | None:
        stretch = self._graph.stretch
        if stretch is not None and (job := stretch.job(self, time)) is not None:
            return job
        rdd = self._get_or_compute(time)
        if rdd is None:
            return None
        share_kryo(rdd)
        fn, label, gate = self._fn, self.label, self._gate
        if self.gives_tentative:  # the exact result, as a tentative one is marked
            rdd.tentative = False  # type: ignore[attr-defined]
            rdd.fidelity = 1.0  # type: ignore[attr-defined]

        def run() -> None:
            try:
                gate.exact(time.ms, lambda: fn(time, rdd))
            except UserFunctionError:
                raise
            except Exception as exc:
                # A failed job's error carries the task's Python traceback; the scheduler
                # extracts it. Driver-side failures are named after this output operation.
                if raised_by_a_task(exc):
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
