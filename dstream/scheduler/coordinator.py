"""What happens around each batch besides its jobs: the metadata journal, the retention of
state checkpoints, and the executor monitor's bookkeeping.

The scheduler's event loop calls these hooks, and nothing else does: a batch generated, a
batch completed, and a state checkpoint written (the checkpointer's thread posts that as an
event rather than writing a record itself). So the journal has exactly one writer, records
are written in the order the loop saw the program's progress, and their sequence numbers
cannot collide::

    event loop ──batch_generated──▶ record (its input on record before any output)
               ──batch_completed──▶ record, then delete checkpoints no record needs
               ──checkpoint_written▶ record (the checkpoint is now relied on)
"""

from __future__ import annotations

import logging
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dstream.jvm import live_conf
from dstream.storage.journal import JournalRecord
from dstream.streams.state_base import StateStream
from dstream.time import Time

if TYPE_CHECKING:
    from pyspark import SparkContext

    from dstream.scheduler.monitor import ExecutorMonitor
    from dstream.storage.journal import MetadataJournal
    from dstream.storage.ownership import Lease
    from dstream.streams.base import DStreamCore
    from dstream.streams.graph import DStreamGraph

__all__ = ["BatchCoordinator", "Position", "journal_names", "ranked", "saved_spark_conf"]

# Settings of one driver process that a recreated SparkContext must not take over (as
# Spark's own streaming Checkpoint leaves them out).
_DRIVER_ONLY = frozenset(
    {
        "spark.app.id",
        "spark.app.startTime",
        "spark.app.submitTime",
        "spark.driver.host",
        "spark.driver.port",
        "spark.driver.bindAddress",
        "spark.ui.port",
        "spark.blockManager.port",
        "spark.executor.id",
        "spark.repl.class.uri",
        "spark.repl.class.outputDir",
    }
)


def saved_spark_conf(sc: SparkContext) -> tuple[tuple[str, str], ...]:
    """The SparkContext's settings a restarted driver recreates its SparkContext with."""
    pairs = live_conf(sc).getAll()
    return tuple(sorted((k, v) for k, v in pairs if k not in _DRIVER_ONLY))


log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Position:
    """Where the scheduler is: the last interval generated, the interval up to which every
    interval is done, the intervals generated but not complete, and the intervals whose
    output failed after its retries (done, never completed)."""

    generated: Time | None
    completed: Time | None
    pending: tuple[Time, ...]
    failed: tuple[Time, ...] = ()


class BatchCoordinator:
    """The scheduler's hooks (see the module docstring); the journal's one owner."""

    def __init__(
        self,
        graph: DStreamGraph,
        journal: MetadataJournal | None,
        lease: Lease | None,
        monitor: ExecutorMonitor | None,
    ) -> None:
        self._graph = graph
        self._journal = journal
        self._lease = lease
        self._monitor = monitor
        self._graph_bytes = b""
        self._names: dict[int, str] = {}
        self._settings_bytes = graph.settings.to_bytes()
        self._spark_conf = saved_spark_conf(graph.sc)
        if journal is not None:
            self._graph_bytes = graph.snapshot()
            self._names = journal_names(graph.streams)
        # Checkpoints referenced by the records still on disk: not to be deleted.
        self._recent_refs: list[dict[int, int]] = []
        self.records_written = 0

    # ---- hooks (the scheduler's event loop) ---------------------------------------------------
    def program_started(self) -> None:
        """Before ``start()`` returns, a fresh program's first record: its zero time, its
        program and where each source starts (a file source's start, Kafka's "latest"
        positions), before any interval exists. From here on a restarted driver resumes
        this program; without it, a driver killed before its first interval came back as a
        new program with a later zero time, and never read the input that arrived between."""
        self._write(Position(generated=None, completed=None, pending=()))

    def batch_generated(self, time: Time, position: Position) -> None:
        """Before any job of ``time`` runs: its input is on record before any output of it."""
        self._write(position)

    def batch_completed(self, time: Time, position: Position) -> None:
        if self._monitor is not None:
            self._monitor.interval_completed(time)
        self._write(position)
        self._delete_unused_checkpoints()

    def checkpoint_written(self, stream: StateStream, time: Time, position: Position) -> None:
        """A state checkpoint is complete: record it before anything older is deleted. A
        failure here halts the engine (the scheduler's loop reports it): without its record
        the checkpoint cannot be relied on, and neither can any record after it."""
        log.debug("checkpoint of %s at %s written", stream.label, time)
        self._write(position)

    # ---- the journal ------------------------------------------------------------------------
    def _write(self, position: Position) -> None:
        if self._journal is None:
            return
        what = "writing a metadata record"
        if self._lease is not None:
            self._lease.check(what)
        graph, sc = self._graph, self._graph.sc
        states: dict[int, dict[str, Any]] = {}
        refs = {}
        for stream in graph.streams:
            state = stream.journal_state()
            if state is not None:
                states[stream.id] = state
                if state.get("checkpoint_ms") is not None:
                    refs[stream.id] = state["checkpoint_ms"]
        assert graph.zero_time is not None, "records are written once the graph has started"
        record = JournalRecord(
            batch_ms=graph.batch_duration.ms,
            zero_ms=graph.zero_time.ms,
            generated_ms=None if position.generated is None else position.generated.ms,
            completed_ms=None if position.completed is None else position.completed.ms,
            pending_ms=tuple(t.ms for t in position.pending),
            failed_ms=tuple(t.ms for t in position.failed),
            graph=self._graph_bytes,
            names=self._names,
            streams=states,
            spark_master=sc.master or "",
            spark_app=sc.appName or "",
            spark_conf=self._spark_conf,
            settings=self._settings_bytes,
            epoch=0 if self._lease is None else self._lease.epoch,
        )
        with nullcontext() if self._lease is None else self._lease.fenced(what):
            self._journal.write(record)
        self._recent_refs = [*self._recent_refs[-2:], refs]
        self.records_written += 1

    def _delete_unused_checkpoints(self) -> None:
        for stream in self._graph.streams:
            if isinstance(stream, StateStream):
                keep = {refs[stream.id] for refs in self._recent_refs if stream.id in refs}
                stream.delete_unused_checkpoints(keep)


def journal_names(streams: list[DStreamCore[Any]]) -> dict[int, str]:
    """Each stream's name in the journal: the one given with setName(), else the operator
    and its rank among streams of that operator (``track#0``), stable for unchanged code.
    A state is named by setName() on the stream its operator returned (``track()``'s view,
    a window's filtered result), which then goes by ``<name>#view``: the name binds the
    state, whatever the user held."""
    given = given_names(streams)
    names = {}
    for stream, rank in ranked(streams):
        if stream.user_name and stream.checkpoint_target is not None:
            names[stream.id] = f"{stream.user_name}#view"
        else:
            names[stream.id] = given.get(stream.id) or f"{stream.operator}#{rank}"
    return names


def given_names(streams: list[DStreamCore[Any]]) -> dict[int, str]:
    """The name setName() gave each stream that has one: its own, or for a state, the one
    given to the stream its operator returned (``track()``'s view, a window's result). The
    name the journal, ``dstream status``, progress records and ``state.<name>`` metrics
    show for a state."""
    by_view = {
        id(s.checkpoint_target): s.user_name
        for s in streams
        if s.checkpoint_target is not None and s.user_name
    }
    names = {}
    for stream in streams:
        name = stream.user_name or by_view.get(id(stream))
        if name:
            names[stream.id] = name
    return names


def ranked(streams: list[DStreamCore[Any]]) -> list[tuple[DStreamCore[Any], int]]:
    seen: dict[str, int] = {}
    out = []
    for stream in streams:
        rank = seen.get(stream.operator, 0)
        seen[stream.operator] = rank + 1
        out.append((stream, rank))
    return out
