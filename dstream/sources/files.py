"""File sources: every interval, the new files of a directory become that interval's RDD.

Which files are "new" for the interval ending at batch time ``t`` (half-open, like every
interval here)::

      ignore_before = max(start time if newFilesOnly else -inf, t - remember)
      new(t) = { f in dir : ignore_before <= mtime(f) < t,  f not chosen before,
                 name not hidden ('.', '_' prefix: files still being written) }

A file that appears late (written at w, renamed into the directory after the interval
covering w was listed) is still taken by a later interval as long as ``w`` is within the
remember window (60 s by default). The files chosen for each interval are recorded, so an
interval can be recomputed — after a worker loss or by a restarted driver — from exactly the
same files.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from dstream.sources.base import InputDStream
from dstream.storage.filesystem import FileInfo, filesystem_for
from dstream.time import Duration, Time

if TYPE_CHECKING:
    from pyspark import RDD

    from dstream.context import StreamingContext
    from dstream.storage.taskfs import TaskFiles

__all__ = ["FileInputDStream", "select_new_files"]


def select_new_files(
    files: Iterable[FileInfo], batch_time: Time, ignore_before: Time, seen: Collection[str]
) -> list[FileInfo]:
    """The files that belong to the interval ending at ``batch_time`` (pure; see module doc)."""
    chosen = [
        f for f in files if ignore_before.ms <= f.modified_ms < batch_time.ms and f.path not in seen
    ]
    return sorted(chosen, key=lambda f: (f.modified_ms, f.path))


def check_directory(directory: object, name: str) -> None:
    if not isinstance(directory, str) or not directory:
        raise ValueError(
            f"{name}() directory {directory!r} must be a non-empty path or URI, "
            "e.g. '/data/in' or 'hdfs://namenode:8020/data/in'"
        )


Reader = Callable[["StreamingContext", list[str]], "RDD[Any]"]


def read_text(ssc: StreamingContext, paths: list[str]) -> RDD[str]:
    sc = ssc.sparkContext
    if any("," in p for p in paths):  # Hadoop splits a path list on commas
        return sc.union([sc.textFile(p) for p in paths])
    return sc.textFile(",".join(paths))


def binary_records_reader(record_length: int) -> Reader:
    def read(ssc: StreamingContext, paths: list[str]) -> RDD[Any]:
        sc = ssc.sparkContext
        rdds = [sc.binaryRecords(p, record_length) for p in paths]
        return rdds[0] if len(rdds) == 1 else sc.union(rdds)

    return read


def text_batches_reader(files: TaskFiles) -> Reader:
    """Lines as one Arrow string array per task, read in the Python worker through ``files``
    (see :mod:`dstream.sources.textbatches`). Each file is cut into enough byte ranges that
    an interval has at least ``defaultParallelism`` tasks."""

    def read(ssc: StreamingContext, paths: list[str]) -> RDD[Any]:
        from dstream.sources.textbatches import read_text_split

        sc = ssc.sparkContext
        per_file = max(1, -(-int(sc.defaultParallelism) // len(paths)))
        splits = [(path, i, per_file) for path in paths for i in range(per_file)]
        return sc.parallelize(splits, len(splits)).map(lambda split: read_text_split(files, *split))

    return read


class FileInputDStream(InputDStream):
    # The files of every interval are on record (and in the metadata journal).
    _durable = True

    def __init__(
        self,
        ssc: StreamingContext,
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
        super().__init__(ssc, name=name)
        self._reader = reader
        self._filter = path_filter
        self._new_files_only = new_files_only
        self._records_are_batches = batches

    # What changes every interval is journaled separately (journal_state), not with the graph.
    _transient: ClassVar[tuple[str, ...]] = ("_fs", "_batch_files", "_seen", "_recorded_until")

    def _init_transient(self) -> None:
        super()._init_transient()
        self._fs = filesystem_for(self._directory, self._ssc.sparkContext)
        # batch time -> the files chosen for it (kept while they may be needed again).
        self._batch_files: dict[Time, list[str]] = {}
        self._seen: set[str] = set()
        # After a restart: intervals up to here must read their recorded files, never a new
        # listing (that could hand the same file to two intervals).
        self._recorded_until: Time | None = None

    def _validate(self) -> None:
        if not self._fs.is_dir(self._directory):
            raise ValueError(
                f"{self._operator}() directory {self._directory} does not exist or is not a "
                "directory; create it before starting the StreamingContext"
            )

    @property
    def _remember_window(self) -> Duration:
        # Whole batches, at least the configured file_remember.
        batch = self._slide_duration
        want = self._ssc._settings.file_remember
        return batch * max(1, -(-want.ms // batch.ms))

    def _description(self) -> str:
        return f"{self._operator}[{self._directory}]"

    def _read(self, time: Time) -> RDD[Any] | None:
        paths = self._batch_files.get(time)
        if paths is None and self._recorded_until is not None and time <= self._recorded_until:
            raise RuntimeError(
                f"{self._label}: the files of interval {time} were not kept in the metadata "
                "journal, so it cannot be recomputed exactly; raise settings.file_remember"
            )
        if paths is None:
            assert self._zero_time is not None  # set by initialize() before any interval
            floor = self._zero_time if self._new_files_only else Time(-(2**62))
            ignore_before = max(floor, time - self._remember_window)
            listed = self._fs.list_files(self._directory)
            if self._filter is not None:
                listed = [f for f in listed if self._filter(f.path)]
            paths = [f.path for f in select_new_files(listed, time, ignore_before, self._seen)]
            self._batch_files[time] = paths
            self._seen.update(paths)
        if not paths:
            self._record_count(time, 0)
            return self._ssc.sparkContext.emptyRDD()
        return self._reader(self._ssc, paths)

    def _input_metadata(self, time: Time) -> dict[str, Any]:
        files = list(self._batch_files.get(time, ()))
        return {"files": files, "Description": "\n".join(files)}

    def _journal_state(self) -> dict[str, Any] | None:
        return {
            "directory": self._directory,
            "_batch_files": {t.ms: list(paths) for t, paths in self._batch_files.items()},
        }

    def _restore_state(self, state: dict[str, Any]) -> None:
        if state.get("directory") != self._directory:
            raise ValueError(
                f"{self._label} watches {self._directory} but the checkpoint was taken watching "
                f"{state.get('directory')}; keep the directory, or start a new checkpoint"
            )
        self._batch_files = {Time(ms): list(p) for ms, p in state["_batch_files"].items()}
        self._seen = {p for paths in self._batch_files.values() for p in paths}
        if self._batch_files:
            self._recorded_until = max(self._batch_files)

    def _clear_metadata(self, time: Time) -> None:
        super()._clear_metadata(time)
        # A file chosen for an interval older than the remember window can never be chosen
        # again (its mtime is below every later ignore_before), so forget it.
        horizon = time - self._remember_window
        for t in [t for t in self._batch_files if t < horizon]:
            self._seen.difference_update(self._batch_files.pop(t))
