"""One generated interval as the scheduler keeps it until it completes: its jobs, how many
are still running, and what listeners and the Streaming tab are told of it (its
``BatchInfo`` and output operations), updated as its jobs start and finish. Owned by the
scheduler's event loop (:mod:`dstream.scheduler.scheduler`)."""

from __future__ import annotations

import time as _time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from dstream.listener import BatchInfo, OutputOperationInfo
from dstream.time import Time, human_time

if TYPE_CHECKING:
    from dstream.errors import StreamingJobError
    from dstream.streams.graph import DStreamGraph
    from dstream.streams.output import Job

__all__ = ["Batch", "in_order"]


@dataclass
class Batch:
    time: Time
    jobs: list[Job]
    info: BatchInfo
    pending: int
    outputs: dict[int, OutputOperationInfo] = field(default_factory=dict)
    finished_at_ms: int | None = None  # every job done; completed once earlier batches are
    failed: bool = False  # an output still failed after its retries
    # Wall time (monotonic s) of the first job's start and of the last job's end: the
    # batch's work whatever the streaming clock says (a ManualClock stands still).
    work_began_s: float | None = None
    work_ended_s: float | None = None

    @classmethod
    def submitted(cls, time: Time, jobs: list[Job], now_ms: int, backlog: int) -> Batch:
        """A batch just generated; as Spark's, its output operations are listed from its
        submission on."""
        outputs = {j.output_index: OutputOperationInfo(time, j.output_index, j.label) for j in jobs}
        info = BatchInfo(time, now_ms, output_operations=in_order(outputs), backlog=backlog)
        return cls(time, jobs, info, pending=len(jobs), outputs=outputs)

    def output_started(self, index: int, at_ms: int) -> tuple[OutputOperationInfo, bool]:
        """Output ``index``'s job started: its info, and whether the batch started with it."""
        if self.work_began_s is None:
            self.work_began_s = _time.monotonic()
        op = replace(self.outputs[index], start_ms=at_ms)
        self.outputs[index] = op
        first = self.info.processing_start_ms is None
        if first:
            self.info = replace(
                self.info, processing_start_ms=at_ms, output_operations=in_order(self.outputs)
            )
        return op, first

    def output_finished(
        self, index: int, at_ms: int, error: StreamingJobError | None, attempts: int
    ) -> OutputOperationInfo:
        op = replace(
            self.outputs[index],
            end_ms=at_ms,
            failure=None if error is None else str(error).splitlines()[0],
            attempts=attempts,
        )
        self.outputs[index] = op
        if error is not None:
            self.failed = True
        self.pending -= 1
        if self.pending == 0:
            self.finished_at_ms = at_ms
            self.work_ended_s = _time.monotonic()
        return op

    def complete_info(self, graph: DStreamGraph, now_ms: int) -> None:
        """The batch's final info: its end, work time, inputs and what it set aside."""
        records = {s.id: s.take_record_count(self.time) for s in graph.inputs}
        metadata = {s.id: m for s in graph.inputs if (m := s.input_metadata(self.time))}
        self.info = replace(
            self.info,
            processing_start_ms=self.info.processing_start_ms or now_ms,
            processing_end_ms=now_ms,
            work_ms=(
                0
                if self.work_began_s is None or self.work_ended_s is None
                else round((self.work_ended_s - self.work_began_s) * 1000)
            ),
            input_records=records,
            input_metadata=metadata,
            output_operations=in_order(self.outputs),
            # Before the interval's metadata record: the dead-letter file comes first.
            quarantined=graph.quarantine.harvest(self.time),
        )

    def active_row(self) -> dict[str, Any]:
        """The batch as the Streaming tab's "Active Batches" shows it."""
        started = self.info.processing_start_ms
        return {
            "batchId": self.time.ms,
            "batchTime": human_time(self.time),
            "status": "queued" if started is None else "processing",
            "submittedAt": human_time(self.info.submission_ms),
            "outputsDone": len(self.jobs) - self.pending,
            "outputsTotal": len(self.jobs),
        }


def in_order(outputs: dict[int, OutputOperationInfo]) -> tuple[OutputOperationInfo, ...]:
    return tuple(outputs[i] for i in sorted(outputs))
