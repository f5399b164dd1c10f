"""Which files a file source's interval takes: the rule, as pure functions.

Which files the interval ending at batch time ``t`` takes (:func:`select_new_files`)::

      new(t) = { f in dir : mtime(f) < t,  f not decided before,
                 name not hidden ('.', '_' prefix: files still being written) }
      taken(t)   = { f in new(t) : t - mtime(f) <= max_file_age }   (no limit if None)
      skipped(t) = new(t) - taken(t)                                 (logged, reported)

A file is *decided* once an interval took or skipped it, and stays so while it is in the
directory; with ``newFilesOnly`` the files there at start, modified before it, are decided
from the outset. A file modified up to ``file_remember`` before its interval is on time; one
that arrives with an older modification time (``mv``, ``rsync -t``, ``cp -p``, a NameNode
clock behind the driver's) is taken by the next interval all the same (late), as long as it
is younger than ``max_file_age`` (Structured Streaming's ``maxFileAge``, 7 days by default).

After a driver restart the decided set is rebuilt (:func:`settled_at_restart`) from the
files on record and the files older than ``file_remember``: what is on record covers at
least that window, so an older file not on record was read (or skipped) before.
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass

from dstream.storage.filesystem import FileInfo
from dstream.time import Duration, Time

__all__ = ["Selection", "select_new_files", "settled_at_restart"]


@dataclass(frozen=True)
class Selection:
    """What one listing decided: the files taken (by modification time, then path), those
    of them older than the remember window (taken late), and the files skipped as older
    than the maximum file age."""

    taken: list[FileInfo]
    late: list[FileInfo]
    too_old: list[FileInfo]


def select_new_files(
    files: Iterable[FileInfo],
    batch_time: Time,
    *,
    remember: Duration,
    max_age: Duration | None,
    decided: Container[str],
) -> Selection:
    """The files the interval ending at ``batch_time`` takes and skips (pure; module doc)."""
    taken, late, too_old = [], [], []
    for f in files:
        if f.path in decided or f.modified_ms >= batch_time.ms:
            continue
        age = batch_time.ms - f.modified_ms
        if max_age is not None and age > max_age.ms:
            too_old.append(f)
            continue
        taken.append(f)
        if age > remember.ms:
            late.append(f)

    def order(fs: list[FileInfo]) -> list[FileInfo]:
        return sorted(fs, key=lambda f: (f.modified_ms, f.path))

    return Selection(order(taken), order(late), order(too_old))


def settled_at_restart(
    files: Iterable[FileInfo],
    batch_time: Time,
    remember: Duration,
    recorded: Container[str],
    start: Time | None = None,
    listed_until: Time | None = None,
) -> set[str]:
    """Files a restarted driver counts as decided before it (pure): those on record, those
    older than the remember window and modified before the last interval listed
    (``listed_until``; what is on record covers at least that window, so an older file not
    on record was read before its record was pruned, or skipped) and, with ``start``
    (newFilesOnly), those modified before the program started. No interval listed (a
    driver that died before its first one): nothing was read, so no age settles a file."""
    return {
        f.path
        for f in files
        if f.path in recorded
        or (
            listed_until is not None
            and f.modified_ms < listed_until.ms
            and batch_time.ms - f.modified_ms > remember.ms
        )
        or (start is not None and f.modified_ms < start.ms)
    }
