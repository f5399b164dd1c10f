"""The DStream graph: every stream, the inputs and the outputs of one StreamingContext.

The scheduler reaches the whole API through :meth:`DStreamGraph.generate_jobs` (one job per
output operation per interval) and :meth:`DStreamGraph._clear_metadata` (after a batch is
done). Nothing else in the scheduler knows what an operator is.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from dstream.time import Duration, Time

if TYPE_CHECKING:
    from dstream.functions import UserFunction
    from dstream.sources.base import InputDStream
    from dstream.streams.base import DStreamCore
    from dstream.streams.output import Job, OutputDStream

__all__ = ["DStreamGraph"]

log = logging.getLogger(__name__)


class DStreamGraph:
    def __init__(self, batch_duration: Duration) -> None:
        self.batch_duration = batch_duration
        self.streams: list[DStreamCore[Any]] = []
        self.inputs: list[InputDStream] = []
        self.outputs: list[OutputDStream] = []
        self._zero_time: Time | None = None
        self._remember_duration: Duration | None = None
        # One lock for every stream's per-time RDD table (see DStreamCore._lock).
        self.lock = threading.RLock()

    def register(self, stream: DStreamCore[Any]) -> int:
        self.streams.append(stream)
        return len(self.streams) - 1

    def add_input(self, stream: InputDStream) -> None:
        self.inputs.append(stream)

    def add_output(self, stream: OutputDStream) -> int:
        self.outputs.append(stream)
        return len(self.outputs) - 1

    def user_functions(self) -> list[UserFunction]:
        return [uf for s in self.streams for uf in s._user_functions]

    def validate(self) -> None:
        if not self.outputs:
            raise ValueError(
                "no output operations are registered, so there is nothing to run; call "
                "foreachRDD(), pprint() or saveAsTextFiles() on a stream before start()"
            )
        for stream in self.streams:
            slide = stream._slide_duration
            if not slide.is_multiple_of(self.batch_duration):
                raise ValueError(
                    f"{stream._label} slides every {slide}, which is not a multiple of the "
                    f"batch interval {self.batch_duration}"
                )
        for source in self.inputs:
            source._validate()

    def start(self, zero_time: Time) -> None:
        self._zero_time = zero_time
        for out in self.outputs:
            out._initialize(zero_time)
        for out in self.outputs:
            out._remember(self._remember_duration)

    def remember(self, duration: Duration) -> None:
        self._remember_duration = duration

    def generate_jobs(self, time: Time) -> list[Job]:
        """The jobs of the interval ending at ``time``; an output whose RDD cannot even be
        built (a driver-side function raised) yields a job that raises that error, so the
        failure is reported with the interval like any other."""
        from dstream.streams.output import Job

        jobs = []
        with self.lock:
            # Every input takes its interval's data now, used or not (a window sliding by two
            # intervals still consumes both): inputs stay faithful to wall-clock intervals.
            for source in self.inputs:
                try:
                    source._get_or_compute(time)
                except Exception:
                    log.exception("%s failed to produce interval %s", source._label, time)
            for out in self.outputs:
                try:
                    job = out._generate_job(time)
                except Exception as exc:
                    job = Job(time, out._output_index, out._label, _raiser(exc))
                if job is not None:
                    jobs.append(job)
        return jobs

    def batch_completed(self, time: Time) -> None:
        """Every job of ``time`` finished: let streams react (checkpoints), then forget what
        no window or query needs any more."""
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
                if stream._storage_level is None:
                    continue
                for rdd in stream._generated.values():
                    try:
                        rdd.unpersist(blocking=False)
                    except Exception:  # a SparkContext stopped meanwhile: nothing is cached
                        log.debug("unpersist of %s failed", stream._label, exc_info=True)


def _raiser(exc: BaseException) -> Any:
    def run() -> None:
        raise exc

    return run
