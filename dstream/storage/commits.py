"""Exactly-once output per interval.

An interval's output is written to a hidden temporary directory next to its final path,
marked complete, and then renamed into place. The rename is the commit: it is atomic and it
refuses to replace an existing directory, so an interval that is recomputed (after a worker
or driver failure, or by a speculative copy of the whole output job) is never written twice,
and a reader never sees half an interval.

::

    out/.counts-3000.txt.tmp-4f1c…/part-00000, _DSTREAM_COMMIT   (being written)
              │  rename (no replace)
              ▼
    out/counts-3000.txt/part-00000, _DSTREAM_COMMIT              (committed, final)
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable

from dstream.storage.filesystem import FileSystem, join, publish

__all__ = [
    "COMMIT_MARKER",
    "TENTATIVE_MARKER",
    "CommitLog",
    "commit_interval",
    "interval_path",
    "tentative_path",
    "write_tentative",
]

COMMIT_MARKER = "_DSTREAM_COMMIT"
TENTATIVE_MARKER = "_DSTREAM_TENTATIVE"


def interval_path(prefix: str, suffix: str | None, time_ms: int) -> str:
    """``prefix-<ms>[.suffix]``, the name pyspark.streaming gives each interval's output."""
    return f"{prefix}-{time_ms}" if not suffix else f"{prefix}-{time_ms}.{suffix}"


def tentative_path(prefix: str, suffix: str | None, time_ms: int) -> str:
    """``prefix.tentative-<ms>[.suffix]``: where an interval's tentative result goes until
    its exact one is committed (a reader of ``prefix-*`` never sees it)."""
    return interval_path(f"{prefix}.tentative", suffix, time_ms)


def write_tentative(
    fs: FileSystem, path: str, write: Callable[[str], None], info: dict[str, object]
) -> None:
    """Write a tentative result at ``path`` (replacing an earlier one of the interval),
    with ``info`` (its fidelity) in its ``_DSTREAM_TENTATIVE`` file."""
    fs.mkdirs(_split(path)[0])
    marker = json.dumps(info).encode()

    def fill(tmp: str) -> None:
        write(tmp)
        fs.write_bytes(join(tmp, TENTATIVE_MARKER), marker)

    if fs.exists(path):
        fs.delete(path)
    publish(fs, path, fill, tag="tentative")


def _split(path: str) -> tuple[str, str]:
    parent, name = posixpath.split(path.rstrip("/"))
    return parent or ".", name


def commit_interval(
    fs: FileSystem, final_path: str, time_ms: int, write: Callable[[str], None], epoch: int = 0
) -> bool:
    """Write one interval's output exactly once. Returns False if it was already committed.

    ``write(tmp_path)`` must create ``tmp_path`` and fill it (e.g. ``rdd.saveAsTextFile``).
    ``epoch`` is the writing driver's lease (:mod:`dstream.storage.ownership`): it goes into
    the temporary directory's name, and only the leftovers of older epochs are cleared, so a
    driver that was paused and resumes can never delete what a newer driver is writing.
    """
    parent, name = _split(final_path)
    if fs.exists(final_path):
        if not fs.exists(join(final_path, COMMIT_MARKER)):
            raise FileExistsError(
                f"output path {final_path} exists but was not committed by dstream (no "
                f"{COMMIT_MARKER} file); move it away or choose another prefix — dstream will "
                "not overwrite data it did not write"
            )
        return False
    fs.mkdirs(parent)
    # Attempts that died before their commit leave a temporary directory: clear those of
    # this driver's epoch or older ones (a newer driver's is not ours to touch).
    stale = f".{name}.tmp-"
    for entry in fs.list_names(parent):
        if entry.startswith(stale) and _epoch_of(entry[len(stale) :]) <= epoch:
            fs.delete(join(parent, entry))
    marker = json.dumps({"time_ms": time_ms, "path": final_path}).encode()

    def fill(tmp: str) -> None:
        write(tmp)
        fs.write_bytes(join(tmp, COMMIT_MARKER), marker)

    # False: another attempt committed this interval while we wrote; ours was a duplicate.
    return publish(fs, final_path, fill, tag=f"e{epoch}")


def _epoch_of(rest: str) -> int:
    """The epoch in a temporary's name (``e<epoch>-<uuid>``); 0 for an untagged one."""
    tag, _, _ = rest.partition("-")
    return int(tag[1:]) if tag.startswith("e") and tag[1:].isdigit() else 0


class CommitLog:
    """Which intervals an output operation has committed: one empty file per interval under
    ``directory``, written (no-replace rename) after the sink returned. Without a directory
    (no checkpoint directory: nothing survives the driver anyway) it is kept in memory.

    Every ``prune_every`` commits, the entries before the ``keep_after_ms`` of the latest
    commit are deleted: whatever the output's slide, the log stays bounded.
    """

    def __init__(self, fs: FileSystem | None, directory: str | None, prune_every: int = 100):
        self._fs, self._dir = fs, directory
        self._memory: set[int] = set()
        self._prune_every = prune_every
        self._since_prune = 0

    def is_committed(self, time_ms: int) -> bool:
        if self._fs is None or self._dir is None:
            return time_ms in self._memory
        return self._fs.exists(join(self._dir, str(time_ms)))

    def commit(self, time_ms: int, keep_after_ms: int) -> None:
        """Record ``time_ms`` as committed; entries before ``keep_after_ms`` may be pruned
        (no restart will redo those intervals)."""
        if self._fs is None or self._dir is None:
            self._memory.add(time_ms)
        else:
            fs = self._fs
            fs.mkdirs(self._dir)
            publish(fs, join(self._dir, str(time_ms)), lambda tmp: fs.write_bytes(tmp, b""))
        self._since_prune += 1
        if self._since_prune >= self._prune_every:
            self._prune(keep_after_ms)

    def _prune(self, before_ms: int) -> None:
        self._since_prune = 0
        if self._fs is None or self._dir is None:
            self._memory = {t for t in self._memory if t >= before_ms}
            return
        for name in self._fs.list_names(self._dir):
            if name.isdigit() and int(name) < before_ms:
                self._fs.delete(join(self._dir, name))
