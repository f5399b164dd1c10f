"""Replay a stateless stretch of intervals as one Spark job (issue 36).

A replay at ``speed="max"`` runs one interval after the other, and each interval of a light
program costs what a Spark job costs (a ``textFile``, a shuffle, a ``saveAsTextFile``:
~190 ms, bench/README "Live queries and replay"), whatever its few records. When nothing
carries from one interval to the next, the intervals need not be separate jobs: a
*stretch* of up to ``StreamingSettings.replay_stretch`` intervals is computed by one job,
and each interval's output is still its own, committed by its own interval.

What can be stretched: every output of the program is a ``saveAsTextFiles`` (not
tentative) whose lineage is a ``textFileStream`` (local file system), per-record operators
(``map``, ``flatMap``, ``filter``, ``mapValues``, ``flatMapValues``) and at most one
``reduceByKey`` right under the output; nothing persisted, remembered or windowed, and
``bad_records="fail"``. Anything else replays one interval at a time, as live
(:func:`stretchable` says why, and the replay logs it). The stretch reads that lineage as
the plan each node declares (:meth:`~dstream.streams.base.DStreamCore.plan_step`:
:class:`~dstream.streams.plan.PerRecord`, :class:`~dstream.streams.plan.KeyedReduce`,
:class:`~dstream.streams.plan.ReadsTextLines`), never by a node's class or fields.

How, at interval t (on the job generator's thread, before the interval's inputs):

1. **List ahead.** Each source lists the next intervals t, t+1, ... with its own rule
   (``FileInputDStream._take_new_files``, recorded and journaled as live; an interval
   already on record, after a restart, keeps its record). The stretch ends before an
   interval with a compressed file (Hadoop's reader decompresses by suffix, the task-side
   reader does not) and at the replay's last interval.
2. **One job per output**, run by interval t's output job: each task reads its share of
   the stretch's files in its Python worker (:func:`dstream.sources.textbatches.
   read_text_split`: exactly Hadoop's ``LineRecordReader`` lines), applies the operators,
   and with a ``reduceByKey`` keys each record by (interval, key) and partitions by the key
   alone, so each interval's key lands in the partition the interval's own ``reduceByKey``
   would put it in. The result tasks write each interval's part files (``part-NNNNN``, one
   per reduce partition as ``saveAsTextFile`` writes them, each line formatted as PySpark
   formats it) into a hidden staging directory.
3. **Commit per interval.** Each interval's output job commits its staged directory with
   the usual exactly-once rename (:func:`dstream.storage.commits.commit_interval`), never
   before its interval; an interval already committed (a rerun) is left out of the job.

So each interval's output directory holds the lines a one-interval replay writes, in the
same part files with a ``reduceByKey`` (the order of lines inside a part file may differ);
without one, the lines in the same order across the part files, cut into part files by
task rather than by input split. The sources' record counts and file lists per interval are
reported as live. A driver that dies mid-stretch leaves its staging directory (cleared by
the next stretch of that output); the intervals after the last committed one are computed
again from their records.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dstream.sources.base import KeyedCounts
from dstream.storage.commits import commit_interval, interval_path
from dstream.storage.filesystem import filesystem_for
from dstream.storage.paths import qualify, split_uri
from dstream.storage.taskfs import LocalTaskFiles
from dstream.streams.output import Job, OutputDStream
from dstream.streams.plan import KeyedReduce, PerRecord, ReadsTextLines, TextLinesSource
from dstream.time import Duration, Time

if TYPE_CHECKING:
    from dstream.streams.base import DStreamCore
    from dstream.streams.graph import DStreamGraph

__all__ = [
    "ReplayStretch",
    "Stretchable",
    "assign_files",
    "compressed",
    "stretch_span",
    "stretchable",
    "text_line",
]

log = logging.getLogger(__name__)

# Suffixes Hadoop's TextInputFormat decompresses (its codecs); the task-side reader reads
# bytes as they are, so an interval with such a file is not stretched.
COMPRESSED_SUFFIXES = frozenset({"gz", "bz2", "deflate", "lz4", "snappy", "zst", "lzo", "br"})
STAGING_MARK = ".stretch-"


# ---- pure rules -------------------------------------------------------------------------------
def compressed(path: str) -> bool:
    """Whether Hadoop's reader would decompress ``path`` (by its suffix)."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return "." in name and name.rsplit(".", 1)[1].lower() in COMPRESSED_SUFFIXES


def stretch_span(time: Time, last: Time, batch: Duration, most: int) -> list[Time]:
    """The intervals a stretch starting at ``time`` may cover: up to ``most``, not past
    ``last``."""
    count = min(most, (last.ms - time.ms) // batch.ms + 1)
    return [time + batch * i for i in range(max(0, count))]


def assign_files(items: list[tuple[int, str]], tasks: int) -> list[list[tuple[int, str]]]:
    """Cut the ``(interval ms, path)`` items, in order, into at most ``tasks`` runs of
    (nearly) equal length, none empty: task i's files all come before task i+1's, so an
    interval's part files in name order hold its files' lines in order."""
    n = max(1, min(tasks, len(items)))
    return (
        [items[i * len(items) // n : (i + 1) * len(items) // n] for i in range(n)] if items else []
    )


def text_line(record: Any) -> bytes:
    """A record as ``saveAsTextFile`` writes it (without the newline): PySpark's rule
    (bytes as they are, str as UTF-8, anything else its ``str()``), then the JVM's round trip
    of the bytes through a Java String (invalid UTF-8 becomes U+FFFD)."""
    if isinstance(record, bytes):
        return record.decode("utf-8", "replace").encode("utf-8")
    if not isinstance(record, str):
        record = str(record)
    return record.encode("utf-8")


# ---- what can be stretched --------------------------------------------------------------------
@dataclass(frozen=True)
class Stretchable:
    """One output's lineage in a form one job can run over many intervals."""

    output: OutputDStream
    source: TextLinesSource
    steps: tuple[Callable[[Iterable[Any]], Iterable[Any]], ...]
    reduce: tuple[Callable[[Any, Any], Any], int] | None
    prefix: str
    suffix: str | None


def _plain(stream: DStreamCore[Any], batch: Duration) -> str | None:
    """Why ``stream`` keeps something between intervals (None: it does not)."""
    if stream.storage_level is not None:
        return f"{stream.label} is persisted"
    if stream.checkpoint_interval is not None:
        return f"{stream.label} is checkpointed"
    if stream.slide_duration != batch:
        return f"{stream.label} slides every {stream.slide_duration}"
    remember = stream.remember_duration
    if remember is not None and remember > stream.slide_duration:
        return f"{stream.label} remembers {remember} (a window or remember())"
    return None


def _local(path: str, graph: DStreamGraph) -> bool:
    return split_uri(qualify(path, graph.sc))[0] in ("", "file")


def _lineage(output: OutputDStream, batch: Duration) -> Stretchable | str:
    target = output.text_target
    if target is None:
        return f"{output.label} is not a saveAsTextFiles output"
    if output.gives_tentative:
        return f"{output.label} gives tentative results"
    prefix, suffix = target
    node = output.parents[0]
    reduce = None
    if isinstance(step := node.plan_step(), KeyedReduce):
        if (why := _plain(node, batch)) is not None:
            return why
        reduce = (step.func, step.partitions)
        node = node.parents[0]
    # The plan each node declares, from the output up to its source (STYLE: no node's class
    # or fields are read here).
    steps: list[Callable[[Iterable[Any]], Iterable[Any]]] = []
    while True:
        match node.plan_step():
            case PerRecord(fn):
                if (why := _plain(node, batch)) is not None:
                    return why
                steps.append(fn)
                node = node.parents[0]
            case ReadsTextLines(source):
                if (why := _plain(node, batch)) is not None:
                    return why
                break
            case _:
                return (
                    f"{output.label} reads {node.label}, not textFileStream through per-record "
                    "operators"
                )
    graph = output.graph
    if not _local(source.directory, graph) or not _local(prefix, graph):
        return f"{output.label} reads or writes a file system other than the local one"
    return Stretchable(output, source, tuple(reversed(steps)), reduce, prefix, suffix)


def stretchable(graph: DStreamGraph) -> list[Stretchable] | str:
    """Every output's stretchable lineage, or why the program cannot be stretched."""
    if graph.quarantine.active:
        return 'bad_records="quarantine" sets records aside per interval'
    if graph.remember_duration is not None:
        return "the program remembers its streams (ssc.remember)"
    if not graph.outputs:
        return "the program has no output"
    forms = []
    for output in graph.outputs:
        form = _lineage(output, graph.batch_duration)
        if isinstance(form, str):
            return form
        forms.append(form)
    read = {id(f.source) for f in forms}
    for source in graph.inputs:
        if id(source) not in read:
            return f"{source.label} feeds no stretchable output"
    return forms


# ---- the job -------------------------------------------------------------------------------------
def _read_and_apply(
    files: Any, steps: tuple[Callable[[Iterable[Any]], Iterable[Any]], ...], counts: Any
) -> Callable[[int, Iterable[list[tuple[int, str]]]], Iterator[tuple[int, Any]]]:
    """The map side: (interval ms, record) for every record of a task's files."""
    from dstream.sources.textbatches import read_text_split

    def run(split: int, chunks: Iterable[list[tuple[int, str]]]) -> Iterator[tuple[int, Any]]:
        read: dict[int, int] = defaultdict(int)
        for chunk in chunks:
            for ms, path in chunk:
                lines = read_text_split(files, path, 0, 1).to_pylist()
                read[ms] += len(lines)
                records: Iterable[Any] = lines
                for step in steps:
                    records = step(records)
                for record in records:
                    yield ms, record
        counts.add({(ms, split): n for ms, n in read.items()})

    return run


def _writer(
    files: Any, staging: str, intervals: list[int], partitions: int | None
) -> Callable[[int, Iterable[tuple[int, Any]]], Iterator[int]]:
    """The result side: each interval's lines of this task into ``staging/<ms>/part-NNNNN``
    (with a reduce: one part file per reduce partition and interval, empty ones too)."""

    def run(split: int, records: Iterable[tuple[int, Any]]) -> Iterator[int]:
        lines: dict[int, list[bytes]] = defaultdict(list)
        for ms, record in records:
            lines[ms].append(text_line(record))
        for ms in intervals if partitions is not None else sorted(lines):
            data = b"".join(line + b"\n" for line in lines.get(ms, ()))
            files.publish(f"{staging}/{ms}/part-{split:05d}", data)
        yield len(lines)

    return run


@dataclass
class _Stretch:
    """One stretch: its intervals, and per output the staged directory of each interval
    (filled by the output's one job)."""

    times: list[Time]
    lock: threading.Lock = field(default_factory=threading.Lock)
    staged: dict[int, dict[Time, str | None]] = field(default_factory=dict)  # output -> ...
    roots: dict[int, str] = field(default_factory=dict)


class ReplayStretch:
    """The stretches of one replay (``graph.stretch`` while it runs; see the module doc)."""

    def __init__(self, graph: DStreamGraph, forms: list[Stretchable], last: Time, most: int):
        self._graph = graph
        self._forms = {f.output.output_index: f for f in forms}
        self._sources = list(dict.fromkeys(f.source for f in forms))
        self._last = last
        self._most = most
        self._covering: dict[Time, _Stretch] = {}
        self._cleared: set[int] = set()
        self.stretched = 0  # intervals replayed inside a stretch

    @classmethod
    def of(cls, graph: DStreamGraph, last: Time) -> ReplayStretch | None:
        most = graph.settings.replay_stretch
        if most <= 1:
            return None
        forms = stretchable(graph)
        if isinstance(forms, str):
            log.info("replay runs one interval at a time: %s", forms)
            return None
        return cls(graph, forms, last, most)

    # ---- on the job generator's thread, under the graph's lock ----------------------------------
    def covers(self, time: Time) -> bool:
        return time in self._covering

    def plan(self, time: Time) -> None:
        """Before interval ``time``'s inputs: start a stretch at ``time`` unless one covers it."""
        for t in [t for t in self._covering if t < time]:
            del self._covering[t]
        if time in self._covering or time > self._last:
            return
        span: list[Time] = []
        for t in stretch_span(time, self._last, self._graph.batch_duration, self._most):
            lists = [source.files_for(t) for source in self._sources]
            if any(compressed(p) for paths in lists for p in paths):
                break
            span.append(t)
        if len(span) < 2:  # one interval (or none): run it as live
            return
        stretch = _Stretch(span)
        for t in span:
            self._covering[t] = stretch
            self._sources_count_zero(t)
        self.stretched += len(span)

    def _sources_count_zero(self, time: Time) -> None:
        # Until the stretch's job counts them: an interval whose job never runs read nothing.
        for source in self._sources:
            source.set_record_count(time, 0)

    def job(self, output: OutputDStream, time: Time) -> Job | None:
        """Interval ``time``'s job for ``output`` when a stretch covers it (None: as live)."""
        stretch = self._covering.get(time)
        if stretch is None:
            return None
        form = self._forms[output.output_index]
        return Job(
            time, output.output_index, output.label, lambda: self._commit(form, stretch, time)
        )

    # ---- on the job threads ---------------------------------------------------------------------
    def _commit(self, form: Stretchable, stretch: _Stretch, time: Time) -> None:
        index = form.output.output_index
        path = interval_path(form.prefix, form.suffix, time.ms)
        fs = filesystem_for(path, self._graph.sc)
        with stretch.lock:
            staged = stretch.staged.get(index, {}).get(time)
            if index not in stretch.staged or (
                # A commit that failed after moving the staged directory: run the job again
                # (the intervals committed meanwhile are left out of it).
                staged is not None and not fs.exists(staged) and not fs.exists(path)
            ):
                stretch.staged[index] = self._run(form, stretch)
                staged = stretch.staged[index].get(time)
        if staged is not None:
            lease = self._graph.runtime.lease

            def write(tmp: str) -> None:
                fs.rename(staged, tmp)
                fs.write_bytes(f"{tmp}/_SUCCESS", b"")

            commit_interval(fs, path, time.ms, write, 0 if lease is None else lease.epoch)
        if time == stretch.times[-1] and index in stretch.roots:
            fs = filesystem_for(stretch.roots[index], self._graph.sc)
            if fs.exists(stretch.roots[index]):
                fs.delete(stretch.roots[index])

    def _staging_root(self, form: Stretchable) -> str:
        parent, _, name = form.prefix.rstrip("/").rpartition("/")
        parent = parent or "."
        fs = filesystem_for(form.prefix, self._graph.sc)
        mark = f".{name}{STAGING_MARK}"
        index = form.output.output_index
        if index not in self._cleared and fs.exists(parent):  # what a dead driver left
            for entry in fs.list_names(parent):
                if entry.startswith(mark):
                    fs.delete(f"{parent}/{entry}")
            self._cleared.add(index)
        lease = self._graph.runtime.lease
        epoch = 0 if lease is None else lease.epoch
        return f"{parent}/{mark}e{epoch}-{uuid.uuid4().hex[:12]}"

    def _run(self, form: Stretchable, stretch: _Stretch) -> dict[Time, str | None]:
        """Run ``form``'s one job over the stretch; the staged directory of each interval
        (None: already committed, not computed)."""
        sc = self._graph.sc
        fs = filesystem_for(form.prefix, sc)
        todo = [
            t for t in stretch.times if not fs.exists(interval_path(form.prefix, form.suffix, t.ms))
        ]
        staged: dict[Time, str | None] = dict.fromkeys(stretch.times)
        if not todo:
            return staged
        root = self._staging_root(form)
        stretch.roots[form.output.output_index] = root
        for t in todo:
            fs.mkdirs(f"{root}/{t.ms}")
            staged[t] = f"{root}/{t.ms}"
        source = form.source
        items = [(t.ms, p) for t in todo for p in source.recorded_files(t) or ()]
        files = LocalTaskFiles()
        counts = sc.accumulator({}, KeyedCounts())
        tasks = assign_files(items, int(sc.defaultParallelism))
        task_root = qualify(root, sc)
        intervals = [t.ms for t in todo]
        if tasks:
            rdd = sc.parallelize(tasks, len(tasks)).mapPartitionsWithIndex(
                _read_and_apply(files, form.steps, counts)
            )
            partitions = None
            if form.reduce is not None:
                func, partitions = form.reduce
                rdd = rdd.map(_keyed).reduceByKey(func, partitions, _by_key).map(_untagged)
            rdd.mapPartitionsWithIndex(_writer(files, task_root, intervals, partitions)).count()
        elif form.reduce is not None:  # no file in the stretch: empty part files, as live
            _, n = form.reduce
            for t in todo:
                for p in range(n):
                    fs.write_bytes(f"{root}/{t.ms}/part-{p:05d}", b"")
        read: dict[int, int] = defaultdict(int)
        for (ms, _split), n in counts.value.items():
            read[ms] += n
        for t in todo:
            source.set_record_count(t, read.get(t.ms, 0))
        return staged


def _keyed(record: tuple[int, Any]) -> tuple[tuple[int, Any], Any]:
    ms, (key, value) = record
    return (ms, key), value


def _untagged(record: tuple[tuple[int, Any], Any]) -> tuple[int, tuple[Any, Any]]:
    (ms, key), value = record
    return ms, (key, value)


def _by_key(tagged: tuple[int, Any]) -> int:
    from pyspark.rdd import portable_hash

    return portable_hash(tagged[1])
