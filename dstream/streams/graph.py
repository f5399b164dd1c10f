"""The DStream graph: every stream, the inputs and the outputs of one StreamingContext, and
what every stream needs from the engine that runs it: the SparkContext, the clock, the
settings, the listener bus, the job group, and the running engine's services
(:class:`Runtime`, implemented by :class:`dstream.scheduler.engine.Engine`). Streams take
the graph, never the user's StreamingContext; code handed a user's context (Kafka's and the
receiver's stream constructors) finds its graph with :func:`graph_of`.

The scheduler reaches the whole API through :meth:`DStreamGraph.generate_jobs` (one job per
output operation per interval) and :meth:`DStreamGraph._clear_metadata` (after a batch is
done). Nothing else in the scheduler knows what an operator is.
"""

from __future__ import annotations

import logging
import threading
import weakref
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol, cast

from dstream.services import Services, UsesServices
from dstream.streams.base import DStreamCore
from dstream.streams.graph_pickle import dumps_graph, loads_graph
from dstream.streams.quarantine import Quarantine
from dstream.streams.tentative_pass import TentativeNotes
from dstream.time import Duration, Time

if TYPE_CHECKING:
    from pyspark import RDD

    from dstream.functions import UserFunction
    from dstream.scheduler.stretch import ReplayStretch
    from dstream.storage.journal import JournalRecord
    from dstream.storage.ownership import Lease
    from dstream.streams.copartitioned import SectionMarks
    from dstream.streams.output import Job, OutputDStream
    from dstream.streams.protocol import InputNode
    from dstream.streams.state_base import StateStream

__all__ = ["DStreamGraph", "Runtime", "graph_of"]

log = logging.getLogger(__name__)


class CheckpointQueue(Protocol):
    """Where a state stream hands an interval to be checkpointed (the engine's checkpointer)."""

    def submit(self, stream: StateStream, time: Time, rdd: RDD[Any]) -> bool: ...


class Runtime(Protocol):
    """What streams ask of the engine that runs them."""

    checkpoint_dir: str | None
    restored_from: JournalRecord | None
    lease: Lease | None

    @property
    def checkpointer(self) -> CheckpointQueue | None: ...

    @property
    def marks(self) -> SectionMarks: ...

    def check_can_add(self, what: str) -> None: ...

    def completed_time(self) -> Time | None: ...


# Each user's StreamingContext's graph (see graph_of). The graph is held weakly too: it
# refers to its context, and a value that refers to its key would keep both alive forever.
_graphs: weakref.WeakKeyDictionary[object, weakref.ref[DStreamGraph]] = weakref.WeakKeyDictionary()


def graph_of(context: object) -> DStreamGraph:
    """The graph of a user's StreamingContext."""
    try:
        graph = _graphs[context]()
    except (KeyError, TypeError):
        graph = None
    if graph is None:
        raise TypeError(
            f"expected a dstream.StreamingContext, got {type(context).__name__}; create one "
            "with dstream.StreamingContext(sc, batchDuration)"
        )
    return graph


class DStreamGraph(UsesServices):
    """One program's streams, and what they need to run (see the module's docstring)."""

    def __init__(
        self,
        batch_duration: Duration,
        *,
        context: object,
        services: Services,
        runtime: Runtime,
    ) -> None:
        self.batch_duration = batch_duration
        self.context = context  # the user's StreamingContext: stream.context() returns it
        self.services = services
        self.runtime = runtime
        # The SQL views of createOrReplaceTempView (dstream.api.queries keeps them here,
        # made with the first one).
        self.views: object | None = None
        # Records set aside under bad_records="quarantine" (dstream.streams.quarantine).
        self.quarantine = Quarantine(self)
        # What state merge tasks report for tentative results (dstream.streams.tentative_pass).
        self.tentative = TentativeNotes(self)
        _graphs[context] = weakref.ref(self)
        self.streams: list[DStreamCore[Any]] = []
        self.inputs: list[InputNode] = []
        self.outputs: list[OutputDStream] = []
        self._zero_time: Time | None = None
        self._remember_duration: Duration | None = None
        # One lock for every stream's per-time RDD table (see DStreamCore._lock).
        self.lock = threading.RLock()
        # While a replay computes stretches of intervals as one job
        # (dstream.scheduler.stretch.ReplayStretch); None otherwise.
        self.stretch: ReplayStretch | None = None

    def check_can_add(self, what: str) -> None:
        """Raise unless streams and outputs may still be added (before start())."""
        self.runtime.check_can_add(what)

    @property
    def zero_time(self) -> Time | None:
        """The time the program started from (None before start)."""
        return self._zero_time

    @property
    def remember_duration(self) -> Duration | None:
        """How long every output keeps its RDDs (``ssc.remember``; None: as they need)."""
        return self._remember_duration

    # ---- the program saved and restored: one symmetric pair ------------------------------------
    def snapshot(self) -> bytes:
        """The program, for the metadata journal: its streams (with the functions they run),
        which of them are inputs and outputs, and the remember duration. This graph, its
        user's context and the SparkContext are saved as references, bound again by
        :meth:`restore` (:mod:`dstream.streams.graph_pickle`)."""
        return dumps_graph(
            {
                "streams": self.streams,
                "inputs": [s.id for s in self.inputs],
                "outputs": [s.id for s in self.outputs],
                "remember": self._remember_duration,
            },
            self,
        )

    def restore(self, snapshot: bytes) -> None:
        """Run the program :meth:`snapshot` saved (a restarted driver's, from the metadata
        journal) in place of the one the code defined; each stream takes this graph's
        services and lock (it already names this graph, unless the record predates streams'
        graph)."""
        saved = loads_graph(snapshot, self)
        streams: list[DStreamCore[Any]] = list(saved["streams"])
        self.streams = streams
        self.inputs = [cast("InputNode", streams[i]) for i in saved["inputs"]]
        self.outputs = [cast("OutputDStream", streams[i]) for i in saved["outputs"]]
        self._remember_duration = saved["remember"]
        for stream in self.streams:
            stream.bind(self)

    def register(self, stream: DStreamCore[Any]) -> int:
        self.streams.append(stream)
        return len(self.streams) - 1

    def add_input(self, stream: InputNode) -> None:
        self.inputs.append(stream)

    def add_output(self, stream: OutputDStream) -> int:
        self.outputs.append(stream)
        return len(self.outputs) - 1

    def user_functions(self) -> list[UserFunction]:
        return [uf for s in self.streams for uf in s.user_functions]

    def validate(self) -> None:
        if not self.outputs:
            raise ValueError(
                "no output operations are registered, so there is nothing to run; call "
                "foreachRDD(), pprint() or saveAsTextFiles() on a stream before start()"
            )
        for stream in self.streams:
            slide = stream.slide_duration
            if not slide.is_multiple_of(self.batch_duration):
                raise ValueError(
                    f"{stream.label} slides every {slide}, which is not a multiple of the "
                    f"batch interval {self.batch_duration}"
                )
        for source in self.inputs:
            source.validate()
        for stream in self.streams:
            stream._check_settings(self.settings)

    def start(self, zero_time: Time) -> None:
        self._zero_time = zero_time
        for out in self.outputs:
            out._initialize(zero_time)
        for out in self.outputs:
            out.remember(self._remember_duration)

    def remember(self, duration: Duration) -> None:
        self._remember_duration = duration

    def generate_jobs(self, time: Time) -> list[Job]:
        """The jobs of the interval ending at ``time``; an output whose RDD cannot even be
        built (a driver-side function raised) yields a job that raises that error, so the
        failure is reported with the interval like any other."""
        from dstream.streams.output import Job

        jobs = []
        with self.lock:
            if self.stretch is not None:  # a replay lists ahead before the inputs read
                self.stretch.plan(time)
            # Every input takes its interval's data now, used or not (a window sliding by two
            # intervals still consumes both): inputs stay faithful to wall-clock intervals.
            for source in self.inputs:
                try:
                    cast("DStreamCore[Any]", source)._get_or_compute(time)  # a node of this graph
                except Exception:
                    log.exception("%s failed to produce interval %s", source.label, time)
            for out in self.outputs:
                try:
                    job = out._generate_job(time)
                except Exception as exc:
                    job = Job(time, out.output_index, out.label, _raiser(exc))
                if job is not None:
                    jobs.append(job)
        if jobs and any(type(s)._before_interval is not _no_hook for s in self.streams):
            jobs[0] = replace(jobs[0], before=lambda: self.before_interval(time))
        return jobs

    def before_interval(self, time: Time) -> None:
        """Run before the first job of ``time`` (every job of the interval before has run)."""
        for stream in self.streams:
            stream._before_interval(time)

    def batch_completed(self, time: Time) -> None:
        """Every job of ``time`` finished: let streams react (checkpoints), then forget what
        no window or query needs any more."""
        self.tentative.harvest(time)
        for stream in self.streams:
            stream._on_batch_completed(time)
        self._clear_metadata(time)

    def _clear_metadata(self, time: Time) -> None:
        with self.lock:
            for stream in self.streams:
                stream._clear_metadata(time)

    def release(self) -> None:
        """The context stopped and its SparkContext goes on (another context, a shell, a
        test session): unpersist every RDD the streams persisted, which nothing will read
        again. (Found when a test of one context saw another stopped context's state, kept
        in two copies, still cached in the shared SparkContext.)"""
        with self.lock:
            for stream in self.streams:
                if stream.storage_level is None:
                    continue
                for rdd in stream._cached_rdds():
                    try:
                        rdd.unpersist(blocking=False)
                    except Exception:  # a SparkContext stopped meanwhile: nothing is cached
                        log.debug("unpersist of %s failed", stream.label, exc_info=True)


_no_hook = DStreamCore._before_interval


def _raiser(exc: BaseException) -> Any:
    def run() -> None:
        raise exc

    return run
