"""Driver recovery: what each metadata record holds, writing it, and rebuilding a context.

A record (see :mod:`dstream.storage.journal` for the file format) is a pickled dict::

    format, batch_ms, zero_ms        the clock grid of the program
    generated_ms, completed_ms       the last interval generated / completed (every interval
    pending                          up to completed_ms is done; pending ones are redone)
    graph                            the streams and user functions (pickled once, at start)
    names                            each stream's journal name (for rebinding changed code)
    streams                          per stream, what changes every interval: the files each
                                     interval read, each state's last checkpoint
    spark                            master and application name, to recreate a SparkContext

Written after an interval's jobs are generated (so the files it reads are on record before
any output of it happens) and after it completes.
"""

from __future__ import annotations

import logging
import pickle
from typing import TYPE_CHECKING, Any

from dstream.storage.graph_pickle import dumps_graph, loads_graph
from dstream.storage.journal import FORMAT_VERSION, MetadataJournal
from dstream.time import Duration, Time

if TYPE_CHECKING:
    from dstream.context import StreamingContext
    from dstream.streams.base import DStreamCore

__all__ = ["JournalWriter", "journal_names", "restore_into"]

log = logging.getLogger(__name__)


def journal_names(streams: list[DStreamCore[Any]]) -> dict[int, str]:
    """Each stream's name in the journal: the one given with setName(), else the operator
    and its rank among streams of that operator (``track#0``), stable for unchanged code."""
    seen: dict[str, int] = {}
    names = {}
    for stream in streams:
        rank = seen.get(stream._operator, 0)
        seen[stream._operator] = rank + 1
        names[stream._id] = stream._user_name or f"{stream._operator}#{rank}"
    return names


class JournalWriter:
    def __init__(self, ssc: StreamingContext, journal: MetadataJournal) -> None:
        self._ssc = ssc
        self._journal = journal
        graph = ssc._graph
        self._graph_bytes = dumps_graph(
            {
                "streams": graph.streams,
                "inputs": [s._id for s in graph.inputs],
                "outputs": [s._id for s in graph.outputs],
                "remember": graph._remember_duration,
            },
            ssc,
            ssc.sparkContext,
        )
        self._names = journal_names(graph.streams)
        # Checkpoints referenced by the records still on disk: not to be deleted.
        self._recent_refs: list[dict[int, int]] = []

    def write(self, generated: Time | None, completed: Time | None, pending: list[Time]) -> None:
        ssc, graph = self._ssc, self._ssc._graph
        states = {}
        refs = {}
        for stream in graph.streams:
            state = stream._journal_state()
            if state is not None:
                states[stream._id] = state
                if state.get("checkpoint_ms") is not None:
                    refs[stream._id] = state["checkpoint_ms"]
        assert graph._zero_time is not None
        record = {
            "format": FORMAT_VERSION,
            "batch_ms": graph.batch_duration.ms,
            "zero_ms": graph._zero_time.ms,
            "generated_ms": None if generated is None else generated.ms,
            "completed_ms": None if completed is None else completed.ms,
            "pending": [t.ms for t in pending],
            "graph": self._graph_bytes,
            "names": self._names,
            "streams": states,
            "spark": {"master": ssc.sparkContext.master, "app": ssc.sparkContext.appName},
        }
        self._journal.write(pickle.dumps(record, protocol=5))
        self._recent_refs = [*self._recent_refs[-2:], refs]

    def protected_checkpoints(self, stream_id: int) -> set[int]:
        return {refs[stream_id] for refs in self._recent_refs if stream_id in refs}


def read_record(payload: bytes) -> dict[str, Any]:
    record: dict[str, Any] = pickle.loads(payload)
    return record


def restore_into(ssc: StreamingContext, record: dict[str, Any], rebuild_graph: bool) -> None:
    """Bind a record to ``ssc``: with ``rebuild_graph`` the streams are the ones the new code
    defined (matched by journal name); otherwise the saved graph replaces them."""
    if record["batch_ms"] != ssc.batch_duration.ms:
        raise ValueError(
            f"the checkpoint was written with a batch interval of {record['batch_ms']} ms and "
            f"the program now uses {ssc.batch_duration.ms} ms; keep the batch interval, or "
            "start from a new checkpoint directory"
        )
    graph = ssc._graph
    if not rebuild_graph:
        saved = loads_graph(record["graph"], ssc, ssc.sparkContext)
        graph.streams = saved["streams"]
        graph.inputs = [graph.streams[i] for i in saved["inputs"]]
        graph.outputs = [graph.streams[i] for i in saved["outputs"]]
        graph._remember_duration = saved["remember"]
        for stream in graph.streams:
            stream._lock = graph.lock
        by_old_id: dict[int, DStreamCore[Any]] = {s._id: s for s in graph.streams}
    else:
        new_names = journal_names(graph.streams)
        wanted = {name: sid for sid, name in record["names"].items() if sid in record["streams"]}
        found = {name: sid for sid, name in new_names.items()}
        missing = sorted(set(wanted) - set(found))
        if missing:
            raise ValueError(
                "the changed program has no stream named "
                + ", ".join(repr(m) for m in missing)
                + " whose state or input the checkpoint holds (streams now: "
                + ", ".join(sorted(found))
                + "); name streams with setName() to match, or start from a new checkpoint"
            )
        by_old_id = {sid: graph.streams[found[name]] for name, sid in wanted.items()}
    for old_id, state in record["streams"].items():
        target = by_old_id.get(old_id)
        if target is not None:
            target._restore_state(state)
    ssc._restored_from = record
    log.info(
        "restored from the metadata journal: completed up to %s ms, %d pending intervals",
        record["completed_ms"],
        len(record["pending"]),
    )


def resume_time(record: dict[str, Any]) -> tuple[Time, Time]:
    """(zero time, first interval to run) of a restored program."""
    batch = Duration(record["batch_ms"])
    zero = Time(record["zero_ms"])
    done = record["completed_ms"]
    first = (Time(done) if done is not None else zero) + batch
    return zero, first
