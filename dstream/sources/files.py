"""File sources: every interval, the new files of a directory become that interval's RDD.

Which files an interval takes is :mod:`dstream.sources.file_selection` (the rule, pure);
how it reads them is :mod:`dstream.sources.file_readers` (exactly those paths). Here: the
stream, its bookkeeping and its records.

A file is *decided* once an interval took or skipped it, and stays so while it is in the
directory: the decided set holds only paths that are still there, so it is bounded by the
directory's size. A file taken late (older than ``file_remember``) is logged; a file older
than ``max_file_age`` is skipped, logged once and counted in the batch's
``StreamInputInfo`` (``skipped``, ``skipped_count``).

The files chosen for each interval are recorded (and journaled), and an interval is only
ever recomputed from its record, never from a new listing: a listing cannot tell which
interval a file belonged to. Records are kept while anything may recompute the interval:
``file_remember`` (a restarted driver re-lists with the files of that window on record),
this stream's remember duration (windows), and every state stream downstream until its
published checkpoint has passed the interval (a rebuild replays the intervals since it).
After a restart, files older than ``file_remember`` that are not on record count as read
before it: a file moved in with an old modification time while the driver was down is not
read (logged).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, cast

from dstream.sources.base import InputDStream
from dstream.sources.file_readers import (
    Reader,
    binary_records_reader,
    read_text,
    text_batches_reader,
)
from dstream.sources.file_selection import Selection, select_new_files, settled_at_restart
from dstream.storage.filesystem import FileInfo, filesystem_for
from dstream.storage.paths import split_uri
from dstream.streams.plan import PlanStep, ReadsTextLines
from dstream.time import Duration, Time

if TYPE_CHECKING:
    from pyspark import RDD

    from dstream.context import StreamingContext
    from dstream.streams.graph import DStreamGraph

__all__ = [
    "FileInputDStream",
    "Selection",
    "binary_records_reader",
    "read_text",
    "select_new_files",
    "settled_at_restart",
    "text_batches_reader",
]

log = logging.getLogger(__name__)

# How many skipped paths a batch's StreamInputInfo lists (skipped_count counts them all).
MAX_REPORTED_SKIPPED = 100


def check_directory(directory: object, name: str) -> None:
    if not isinstance(directory, str) or not directory:
        raise ValueError(
            f"{name}() directory {directory!r} must be a non-empty path or URI, "
            "e.g. '/data/in' or 'hdfs://namenode:8020/data/in'"
        )


class FileInputDStream(InputDStream):
    # The files of every interval are on record (and in the metadata journal).
    durable = True

    def __init__(
        self,
        graph: DStreamGraph,
        directory: str,
        *,
        reader: Reader = read_text,
        path_filter: Callable[[str], bool] | None = None,
        new_files_only: bool = True,
        name: str = "textFileStream",
        batches: bool = False,
    ) -> None:
        check_directory(directory, name)
        self._directory = directory
        super().__init__(graph, name=name)
        self._reader = reader
        self._filter = path_filter
        self._new_files_only = new_files_only
        self._records_are_batches = batches

    # What changes every interval is journaled separately (journal_state), not with the graph.
    _transient: ClassVar[tuple[str, ...]] = (
        "_fs",
        "_batch_files",
        "_batch_skipped",
        "_decided",
        "_listed_until",
        "_restored",
    )

    def _init_transient(self) -> None:
        super()._init_transient()
        self._fs = filesystem_for(self._directory, self._graph.sc)
        # batch time -> the files chosen for it (kept while an interval may be recomputed).
        self._batch_files: dict[Time, list[str]] = {}
        # batch time -> the files skipped by its listing (until the batch is reported).
        self._batch_skipped: dict[Time, list[str]] = {}
        # Paths still in the directory that an interval took or skipped (None after a
        # restart, until the first listing settles it).
        self._decided: set[str] | None = set()
        # Intervals up to here were listed: they are read from their record, never listed
        # again (a new listing could hand a file another interval already read).
        self._listed_until: Time | None = None
        self._restored = False

    def validate(self) -> None:
        if not self._fs.is_dir(self._directory):
            raise ValueError(
                f"{self._operator}() directory {self._directory} does not exist or is not a "
                "directory; create it before starting the StreamingContext"
            )

    def start(self) -> None:
        # With newFilesOnly, what is in the directory at start and modified before it is
        # not new (after a restart the records say what was read instead).
        if self._restored or not self._new_files_only:
            return
        assert self._zero_time is not None  # set by initialize() before start
        self._decided = {f.path for f in self._list() if f.modified_ms < self._zero_time.ms}

    @property
    def _remember_window(self) -> Duration:
        # Whole batches, at least the configured file_remember.
        batch = self.slide_duration
        want = self._graph.settings.file_remember
        return batch * max(1, -(-want.ms // batch.ms))

    def description(self) -> str:
        return f"{self._operator}[{self._directory}]"

    def _list(self) -> list[FileInfo]:
        listed = self._fs.list_files(self._directory)
        if self._filter is not None:
            listed = [f for f in listed if self._filter(f.path)]
        return listed

    def _can_compute(self, time: Time) -> bool:
        # A past interval is recomputable only from its record.
        if not super()._can_compute(time):
            return False
        listed = self._listed_until
        return (
            time in self._generated or time in self._batch_files or listed is None or time > listed
        )

    def _read(self, time: Time) -> RDD[Any] | None:
        stretch = self._graph.stretch
        if stretch is not None and stretch.covers(time):  # one job reads the stretch's files
            return None
        paths = self._batch_files.get(time)
        if paths is None:
            if self._listed_until is not None and time <= self._listed_until:
                kept = min(self._batch_files, default=None)
                raise RuntimeError(
                    f"{self.label} was asked for interval {time}, whose file list is no "
                    f"longer kept (the oldest kept is {kept}); a new listing could hand it "
                    "files other intervals already read, so it cannot be recomputed exactly. "
                    "Lists are kept while any window or state may need them; a checkpoint "
                    "directory written by an older dstream may lack them: start from a new one"
                )
            paths = self._take_new_files(time)
        if not paths:
            self.set_record_count(time, 0)
            return self._graph.sc.emptyRDD()
        context = cast("StreamingContext", self._graph.context)
        return self._reader(context, [self._spark_path(p) for p in paths])

    @staticmethod
    def _spark_path(path: str) -> str:
        # A listed local path is handed to Spark as file:///..., never resolved against
        # another default file system.
        return path if split_uri(path)[0] else "file://" + path

    @property
    def directory(self) -> str:
        """The directory this stream reads new files from."""
        return self._directory

    @property
    def reader(self) -> Callable[..., Any]:
        """How a batch's files become an RDD (text lines, binary records, ...)."""
        return self._reader

    def plan_step(self) -> PlanStep | None:
        return ReadsTextLines(self) if self._reader is read_text else None

    def recorded_files(self, time: Time) -> list[str] | None:
        """The files interval ``time`` read, if they are on record (None: not chosen yet, or
        forgotten)."""
        return self._batch_files.get(time)

    def files_for(self, time: Time) -> list[str]:
        """The files interval ``time`` reads: those on record, else a new listing of the
        directory (chosen, logged and recorded now)."""
        recorded = self._batch_files.get(time)
        return list(recorded) if recorded is not None else self._take_new_files(time)

    def _take_new_files(self, time: Time) -> list[str]:
        """List the directory for the new interval ``time``: choose, log, record."""
        listed = self._list()
        remember, max_age = self._remember_window, self._graph.settings.max_file_age
        if max_age is not None:  # the remember window is rounded up to whole batches
            max_age = max(max_age, remember)
        if self._decided is None:  # the first listing after a restart
            recorded = {p for ps in self._batch_files.values() for p in ps}
            start = self._zero_time if self._new_files_only else None
            self._decided = settled_at_restart(
                listed, time, remember, recorded, start, self._listed_until
            )
            unrecorded = len(self._decided - recorded)
            if unrecorded:
                log.info(
                    "%s: %d files in %s older than settings.file_remember (%s) are not on "
                    "record after the restart; they count as read before it",
                    self.label,
                    unrecorded,
                    self._directory,
                    remember,
                )
        chosen = select_new_files(
            listed, time, remember=remember, max_age=max_age, decided=self._decided
        )
        for f in chosen.late:
            log.info(
                "%s: %s was modified at %s, %s before interval %s: older than "
                "settings.file_remember (%s) but within max_file_age, so it is taken now",
                self.label,
                f.path,
                Time(f.modified_ms),
                Duration(time.ms - f.modified_ms),
                time,
                remember,
            )
        for f in chosen.too_old:
            log.warning(
                "%s: skipped %s: modified at %s, %s before interval %s, older than "
                "settings.max_file_age (%s); raise max_file_age (or set it to None) to read "
                "such files",
                self.label,
                f.path,
                Time(f.modified_ms),
                Duration(time.ms - f.modified_ms),
                time,
                max_age,
            )
        present = {f.path for f in listed}
        paths = [f.path for f in chosen.taken]
        self._decided = {p for p in self._decided if p in present}
        self._decided.update(paths)
        self._decided.update(f.path for f in chosen.too_old)
        self._batch_files[time] = paths
        self._batch_skipped[time] = [f.path for f in chosen.too_old]
        self._listed_until = time if self._listed_until is None else max(time, self._listed_until)
        return paths

    def input_metadata(self, time: Time) -> dict[str, Any]:
        files = list(self._batch_files.get(time, ()))
        skipped = self._batch_skipped.get(time, [])
        return {
            "files": files,
            "Description": "\n".join(files),
            "skipped": skipped[:MAX_REPORTED_SKIPPED],
            "skipped_count": len(skipped),
        }

    def journal_state(self) -> dict[str, Any] | None:
        return {
            "directory": self._directory,
            "_batch_files": {t.ms: list(paths) for t, paths in self._batch_files.items()},
            "listed_until_ms": None if self._listed_until is None else self._listed_until.ms,
        }

    def restore_state(self, state: dict[str, Any]) -> None:
        if state.get("directory") != self._directory:
            raise ValueError(
                f"{self.label} watches {self._directory} but the checkpoint was taken watching "
                f"{state.get('directory')}; keep the directory, or start a new checkpoint"
            )
        self._batch_files = {Time(ms): list(p) for ms, p in state["_batch_files"].items()}
        listed_ms = state.get("listed_until_ms")
        if listed_ms is None and self._batch_files:  # a record from before listed_until_ms
            listed_ms = max(self._batch_files).ms
        self._listed_until = None if listed_ms is None else Time(listed_ms)
        self._decided = None
        self._restored = True

    # ---- how long records are kept --------------------------------------------------------
    def _record_horizon(self, time: Time) -> Time:
        """Records of intervals at or before the returned time are no longer needed."""
        keep = self._remember_duration or self.slide_duration
        horizon = min(time - self._remember_window, time - keep)
        floor = self._states_floor()
        return horizon if floor is None else min(horizon, floor - keep)

    def _clear_metadata(self, time: Time) -> None:
        super()._clear_metadata(time)
        horizon = self._record_horizon(time)
        for t in [t for t in self._batch_files if t <= horizon]:
            del self._batch_files[t]
        for t in [t for t in self._batch_skipped if t <= time]:  # reported by now
            del self._batch_skipped[t]
