"""Driver recovery: rebuilding a StreamingContext from the newest metadata record.

``StreamingContext.getOrCreate`` comes here. The record (:class:`JournalRecord`) holds the
program as it was started (graph and functions), each stream's carried-over state (the files
every interval read, each state's last checkpoint) and where the program was; a restored
context then starts at the first interval not known to be complete, rebuilds state from the
checkpoints, and recomputes from durable input what the checkpoints do not cover.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dstream.scheduler.coordinator import journal_names, ranked
from dstream.scheduler.engine import Engine, engine_of
from dstream.settings import StreamingSettings
from dstream.storage.journal import CheckpointDirectoryError, JournalRecord, MetadataJournal
from dstream.time import Duration

if TYPE_CHECKING:
    from pyspark import SparkContext

    from dstream.clock import Clock
    from dstream.context import StreamingContext
    from dstream.streams.base import DStreamCore

__all__ = ["recover", "restore_into", "set_up"]

log = logging.getLogger(__name__)


def recover(
    path: str,
    setup: Callable[[], StreamingContext],
    sc: SparkContext | None,
    *,
    rebuild_graph: bool,
    clock: Clock | None,
    settings: StreamingSettings | None,
    new_context: Callable[[SparkContext, Duration, Clock | None, StreamingSettings], Any],
) -> StreamingContext:
    """The program whose metadata is in ``path``, resumed; or ``setup()``'s when there is none.
    ``new_context(sc, batch, clock, settings)`` makes the StreamingContext a saved program is
    restored into."""
    from pyspark import SparkConf, SparkContext

    from dstream.storage.filesystem import filesystem_for

    if sc is None:
        sc = SparkContext._active_spark_context
    if sc is None and _needs_spark_to_reach(path, _default_fs):
        sc = SparkContext(conf=SparkConf())
    journal = MetadataJournal(filesystem_for(path, sc), path)
    journal.check_directory(create=False)
    latest = journal.read_latest()
    if latest is None:
        _refuse_unrecorded_owners(journal, path)
        return set_up(setup, path)
    record = latest.record
    saved = StreamingSettings.from_bytes(record.settings)
    if rebuild_graph:
        ssc = set_up(setup, path)
        _log_overrides(saved, engine_of(ssc).settings, "the program setupFunc defines now")
    else:
        if sc is None:
            sc = SparkContext(conf=SparkConf(loadDefaults=False).setAll(list(record.spark_conf)))
        if settings is not None:
            _log_overrides(saved, settings, "the settings given to getOrCreate")
        ssc = new_context(sc, Duration(record.batch_ms), clock, settings or saved)
        engine_of(ssc).checkpoint_dir = path
    engine = engine_of(ssc)
    restore_into(engine, record, rebuild_graph=rebuild_graph)
    engine.journal = journal
    return ssc


def _refuse_unrecorded_owners(journal: MetadataJournal, path: str) -> None:
    """A directory that a driver took but holds no record: that driver died inside
    ``start()``, after taking the directory and before recording its program (a start()
    that fails gives the directory back). Starting a new program here would take a later
    zero time and count the input that arrived in between as already there, so this is
    refused, never done silently."""
    from dstream.storage.ownership import owners_on_record

    owners = owners_on_record(journal.fs, path)
    if owners:
        raise CheckpointDirectoryError(
            f"checkpoint directory {path} was taken by a driver ({owners[0]}) that left no "
            "metadata record: it died inside start(), before its program was recorded, so "
            "none of its intervals ran. A new program started here would not read the input "
            "that arrived since then (newFilesOnly files, Kafka's 'latest'). To start afresh "
            f"anyway, delete {path.rstrip('/')}/owners; or start from a new directory"
        )


def _needs_spark_to_reach(path: str, default_fs: Callable[[], str]) -> bool:
    """Whether ``path`` is off the local disk: a scheme other than ``file:``, or no scheme
    while the default file system (``default_fs()``) is not local. A path Spark resolves
    on HDFS must be read through Spark, never on the local disk."""
    from dstream.storage.paths import split_uri

    scheme = split_uri(path)[0]
    if not scheme:
        scheme = split_uri(default_fs())[0]
    return scheme not in ("", "file")


def _default_fs() -> str:
    """Hadoop's ``fs.defaultFS`` as a SparkContext started now would see it, when a JVM is
    there to ask (a context existed, or spark-submit started this process: its JVM holds
    spark-defaults and HADOOP_CONF_DIR): Spark's ``spark.hadoop.fs.defaultFS`` over Hadoop's
    core-site.xml. In a plain ``python`` process no JVM is started here, since the context's
    own settings (driver memory, packages) must reach the JVM when setupFunc starts it: a
    scheme-less path is then local, and a program that keeps its checkpoint on HDFS names
    the scheme or passes its SparkContext to getOrCreate."""
    import os

    from pyspark import SparkConf, SparkContext

    if SparkContext._jvm is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        return "file:///"
    SparkContext._ensure_initialized()
    configured = SparkConf().get("spark.hadoop.fs.defaultFS")
    if configured:
        return str(configured)
    jvm: Any = SparkContext._jvm
    return str(jvm.org.apache.hadoop.conf.Configuration().get("fs.defaultFS", "file:///"))


def _log_overrides(saved: StreamingSettings, now: StreamingSettings, whose: str) -> None:
    diff = saved.differences(now)
    if diff:
        log.warning(
            "resuming with %s instead of the saved settings: %s",
            whose,
            "; ".join(f"{k}: {a!r} then, {b!r} now" for k, (a, b) in sorted(diff.items())),
        )


def set_up(setup: Callable[[], StreamingContext], path: str | None) -> StreamingContext:
    """The program ``setup()`` defines, bound to the checkpoint directory ``path`` (if any)."""
    ssc = setup()
    try:
        engine = engine_of(ssc)
    except TypeError:
        raise TypeError(
            f"setupFunc must return a dstream.StreamingContext, got {type(ssc).__name__}"
        ) from None
    if path is None:
        return ssc
    if engine.checkpoint_dir is None:
        engine.use_checkpoint_dir(path)  # created now, as PySpark's getOrCreate does
    elif engine.checkpoint_dir.rstrip("/") != path.rstrip("/"):
        raise ValueError(
            f"setupFunc set the checkpoint directory {engine.checkpoint_dir}, but "
            f"getOrCreate was given {path}; use the same directory in both"
        )
    return ssc


def restore_into(engine: Engine, record: JournalRecord, rebuild_graph: bool) -> None:
    """Bind a record to ``engine``'s program: with ``rebuild_graph`` the streams are the ones
    the new code defined (matched by journal name); otherwise the saved graph replaces them."""
    if record.batch_ms != engine.batch_duration.ms:
        raise ValueError(
            f"the checkpoint was written with a batch interval of {record.batch_ms} ms and "
            f"the program now uses {engine.batch_duration.ms} ms; keep the batch interval, or "
            "start from a new checkpoint directory"
        )
    graph = engine.graph
    if not rebuild_graph:
        graph.restore(record.graph)
        by_old_id: dict[int, DStreamCore[Any]] = {s.id: s for s in graph.streams}
    else:
        new_names = journal_names(graph.streams)
        wanted = {name: sid for sid, name in record.names.items() if sid in record.streams}
        # Operator and rank as well: what journals written before a view's name named its
        # state (track(), windows) recorded for that state.
        found = {f"{s.operator}#{rank}": s.id for s, rank in ranked(graph.streams)}
        found.update({name: sid for sid, name in new_names.items()})
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
    for old_id, state in record.streams.items():
        target = by_old_id.get(old_id)
        if target is not None:
            target.restore_state(state)
    engine.restored_from = record
    log.info(
        "restored from the metadata journal: completed up to %s ms, %d pending intervals",
        record.completed_ms,
        len(record.pending_ms),
    )
